//! The README's walk-through, run as it is written, against a real stack:
//! a newcomer's first commands cannot rot.
use std::process::Command;

use catalog_tests::{ADMIN_PASSWORD, Stack, StackOptions};

fn walkthrough_block() -> String {
    let readme = std::fs::read_to_string(catalog_tests::package_dir().join("../README.md")).unwrap();
    let after_marker = readme
        .split_once("<!-- walkthrough")
        .expect("the README marks its walk-through")
        .1;
    let block = after_marker
        .split_once("```sh\n")
        .expect("a sh block after the marker")
        .1;
    block.split_once("```").expect("the block closes").0.to_string()
}

#[tokio::test]
async fn the_readme_walkthrough_works_as_written() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    // A folder of its own, with the repository's tests/ where the README
    // expects it, so the tile file lands there.
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(catalog_tests::package_dir(), dir.path().join("tests")).unwrap();
    let output = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &walkthrough_block()])
        .current_dir(dir.path())
        .env("BASE", &stack.base)
        .env("ADMIN_PASSWORD", ADMIN_PASSWORD)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the walk-through failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines, ["job succeeded", "100", "tile 200"], "{stdout}");
    let tile = std::fs::read(dir.path().join("tile.mvt")).unwrap();
    assert!(
        tile.len() > 100,
        "a tile with North Carolina in it: {} bytes",
        tile.len()
    );
}
