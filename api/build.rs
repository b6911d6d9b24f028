// The web UI's built files are embedded (rust-embed): rebuild when they change.
fn main() {
    println!("cargo:rerun-if-changed=../ui/dist");
}
