//! PostgreSQL clusters of a test's own, for what the shared test cluster
//! cannot be put through: a primary with a streaming replica made by
//! `pg_basebackup -R`, paused replay, and either server stopped and started
//! again; and PgBouncer (Debian's 1.18) in front of a database. Data
//! directories live under the project's `.data/clusters/`, owned by
//! `postgres` when the tests run as root (initdb and PgBouncer refuse
//! root).
use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use uuid::Uuid;

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

pub struct Cluster {
    pub dir: PathBuf,
    pub port: u16,
}

fn as_owner(program: &str) -> Command {
    as_postgres(&format!("{PG_BIN}/{program}"))
}

fn as_postgres(program: &str) -> Command {
    if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--", program]);
        command
    } else {
        Command::new(program)
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn run(mut command: Command, what: &str) {
    let output = command.stdin(Stdio::null()).output().unwrap();
    assert!(
        output.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn fresh_dir(label: &str) -> PathBuf {
    let dir = super::package_dir()
        .join("../.data/clusters")
        .join(format!("{label}-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    if is_root() {
        run(
            {
                let mut c = Command::new("chown");
                c.args(["postgres:", dir.to_str().unwrap()]);
                c
            },
            "chown",
        );
    }
    let mut permissions = std::fs::metadata(&dir).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o700);
    std::fs::set_permissions(&dir, permissions).unwrap();
    dir
}

impl Cluster {
    /// A new primary with the `catalog` superuser (trust on loopback,
    /// replication allowed), started, with a `catalog` database holding
    /// PostGIS.
    pub fn primary() -> Self {
        let dir = fresh_dir("primary");
        let port = super::free_port();
        let mut initdb = as_owner("initdb");
        initdb.args([
            "-D",
            dir.to_str().unwrap(),
            "-U",
            "catalog",
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
        ]);
        run(initdb, "initdb");
        let settings = format!(
            "listen_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{}'\nmax_connections = 200\n\
             fsync = off\nfull_page_writes = off\nwal_level = replica\nmax_wal_senders = 4\nhot_standby_feedback = on\n",
            dir.display()
        );
        append(&dir.join("postgresql.conf"), &settings);
        append(
            &dir.join("pg_hba.conf"),
            "host replication catalog 127.0.0.1/32 trust\n",
        );
        let cluster = Self { dir, port };
        cluster.start();
        cluster.psql("postgres", "CREATE DATABASE catalog");
        cluster.psql("catalog", "CREATE EXTENSION postgis");
        cluster
    }

    /// A streaming replica of `primary` (`pg_basebackup -R`), started.
    pub fn replica_of(primary: &Cluster) -> Self {
        let dir = fresh_dir("replica");
        let port = super::free_port();
        let mut backup = as_owner("pg_basebackup");
        backup.args([
            "-h",
            "127.0.0.1",
            "-p",
            &primary.port.to_string(),
            "-U",
            "catalog",
            "-D",
            dir.to_str().unwrap(),
            "-R",
            "-X",
            "stream",
            // An immediate checkpoint: a spread one paces its writes over
            // most of checkpoint_timeout (minutes) before the copy starts.
            "-c",
            "fast",
        ]);
        run(backup, "pg_basebackup");
        append(
            &dir.join("postgresql.conf"),
            &format!("port = {port}\nunix_socket_directories = '{}'\n", dir.display()),
        );
        let cluster = Self { dir, port };
        cluster.start();
        cluster
    }

    pub fn url(&self, database: &str) -> String {
        format!("postgres://catalog@127.0.0.1:{}/{database}", self.port)
    }

    pub fn start(&self) {
        let mut start = as_owner("pg_ctl");
        start.args(["-D", self.dir.to_str().unwrap(), "-l"]);
        start.arg(self.dir.join("server.log"));
        start.args(["-w", "-t", "60", "start"]);
        run(start, "pg_ctl start");
    }

    /// Stops the server at once, as a crash would.
    pub fn stop(&self) {
        let mut stop = as_owner("pg_ctl");
        stop.args(["-D", self.dir.to_str().unwrap(), "-m", "immediate", "-w", "stop"]);
        run(stop, "pg_ctl stop");
    }

    /// One statement's result rows as text (psql's unaligned output).
    pub fn psql(&self, database: &str, sql: &str) -> String {
        let output = Command::new("psql")
            .args([&self.url(database), "-XtAc", sql])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// Waits until the server answers a query.
    pub async fn wait_answering(&self) {
        for _ in 0..200 {
            let answered = Command::new("psql")
                .args([&self.url("postgres"), "-XtAc", "SELECT 1"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if answered {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the cluster on port {} never answered", self.port);
    }
}

fn append(file: &Path, text: &str) {
    let mut current = std::fs::read_to_string(file).unwrap_or_default();
    current.push_str(text);
    std::fs::write(file, current).unwrap();
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let mut stop = as_owner("pg_ctl");
        stop.args(["-D", self.dir.to_str().unwrap(), "-m", "immediate", "stop"]);
        let _ = stop.stdout(Stdio::null()).stderr(Stdio::null()).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// PgBouncer on loopback in front of the server at `port`, every database
/// passed through, as `catalog` (and the sandbox's role) with no password.
pub struct PgBouncer {
    pub port: u16,
    dir: PathBuf,
    child: std::process::Child,
}

impl PgBouncer {
    /// `mode`: `transaction` or `session`.
    pub async fn start(server_port: u16, mode: &str) -> Self {
        let dir = fresh_dir("pgbouncer");
        let port = super::free_port();
        std::fs::write(dir.join("userlist.txt"), "\"catalog\" \"\"\n\"catalog_sandbox\" \"\"\n").unwrap();
        let config = format!(
            "[databases]\n* = host=127.0.0.1 port={server_port}\n\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n\
             unix_socket_dir =\nauth_type = trust\nauth_file = {dir}/userlist.txt\npool_mode = {mode}\n\
             max_client_conn = 500\ndefault_pool_size = {pool_size}\nadmin_users = catalog\n\
             ignore_startup_parameters = extra_float_digits\nlogfile = {dir}/pgbouncer.log\npidfile = {dir}/pgbouncer.pid\n",
            dir = dir.display(),
            // A session holds its server connection for as long as the
            // client keeps it: room for every pool of the API and worker.
            pool_size = if mode == "session" { 100 } else { 12 },
        );
        let ini = dir.join("pgbouncer.ini");
        std::fs::write(&ini, config).unwrap();
        let mut command = as_postgres("/usr/sbin/pgbouncer");
        let child = command
            .arg(&ini)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("pgbouncer (installed by scripts/test.sh)");
        let bouncer = Self { port, dir, child };
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return bouncer;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("pgbouncer did not start: {}", bouncer.log());
    }

    pub fn url(&self, database: &str) -> String {
        format!("postgres://catalog@127.0.0.1:{}/{database}", self.port)
    }

    /// One line of the admin console's `SHOW <what>` for `database`, as
    /// column name to value.
    pub fn show(&self, what: &str, database: &str) -> std::collections::HashMap<String, String> {
        let output = Command::new("psql")
            .args([&self.url("pgbouncer"), "-XAF", "\t", "-c", &format!("SHOW {what}")])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        let mut lines = text.lines();
        let names: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
        lines
            .map(|l| l.split('\t').collect::<Vec<_>>())
            .find(|values| values.first() == Some(&database))
            .map(|values| {
                names
                    .iter()
                    .map(|n| n.to_string())
                    .zip(values.iter().map(|v| v.to_string()))
                    .collect()
            })
            .unwrap_or_else(|| panic!("no {database} in SHOW {what}: {text}"))
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default()
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        // As root the child is runuser: the server itself is named by its
        // pid file.
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("pgbouncer.pid")) {
            let _ = Command::new("kill").args(["-INT", pid.trim()]).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
