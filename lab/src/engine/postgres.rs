//! PostgreSQL, on a private server the lab starts and stops itself.
//!
//! The lab never touches a server it did not start: it runs `initdb` on a fresh
//! data directory and starts `postgres` listening only on a unix socket in a private
//! temporary directory, with the settings a careful user would give a benchmark
//! machine (256 MB of shared buffers, checkpoints that do not interrupt a load,
//! `fsync` on). As root (containers, CI) the server runs as the `postgres` system
//! user, since PostgreSQL refuses to run as root.
//!
//! Clients use the `postgres` crate as an application would: parameterized
//! statements are prepared once per connection, everything else is one round trip
//! of the extended protocol. Answers arrive in binary and are decoded here (the crate
//! cannot decode NUMERIC or dates without extra features), parameters are sent as
//! text, as libpq sends them, so that the server converts them to whatever type it
//! inferred for each `$n`.

use std::collections::HashMap;
use std::error::Error as _;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use postgres::types::{FromSql, Kind, ToSql, Type};
use postgres::{Client, Config, NoTls, Row, Statement};

use super::{Cell, Durability, Engine, EngineKind, LabError, LabResult, Outcome, Param};

/// A PostgreSQL server of the lab's own; stopped, and its temporary files removed,
/// when dropped.
pub struct PostgresServer {
    /// Directory holding `initdb`, `pg_ctl` and `postgres`.
    bin: PathBuf,
    /// The cluster's data directory.
    data: PathBuf,
    /// Private temporary directory (mode 0755, owned by the server's user): the unix
    /// socket, the server log and, when `start`'s directory is out of the server
    /// user's reach, the data directory.
    tmp: tempfile::TempDir,
    port: u16,
    /// We are root: server commands run as the `postgres` system user.
    as_postgres: bool,
    version: String,
}

impl PostgresServer {
    /// Creates a fresh cluster and starts a server on it.
    ///
    /// `dir` is where the data directory goes; it is removed first if it exists.
    /// When running as root and the `postgres` user cannot reach `dir` (an ancestor
    /// that is not world-searchable, such as `/root`), the data directory goes into
    /// the server's private temporary directory under `/tmp` instead, which is
    /// removed when the server is dropped. A data directory at `dir` is left in
    /// place, like the other engines' database files.
    pub fn start(dir: &Path) -> LabResult<PostgresServer> {
        let bin = find_bin_dir()?;
        let as_postgres = running_as_root()?;
        let dir = std::path::absolute(dir).map_err(|e| LabError::new(format!("{}: {e}", dir.display())))?;

        // The socket path must stay short (about 100 bytes): a directory in /tmp.
        let tmp = tempfile::Builder::new()
            .prefix("beedb-lab-pg-")
            .tempdir_in("/tmp")
            .map_err(|e| LabError::new(format!("temporary directory in /tmp: {e}")))?;
        set_mode_0755(tmp.path())?;
        if as_postgres {
            chown_to_postgres(tmp.path())?;
        }

        if dir.exists() {
            // A server a crashed run left behind on this directory is ours: stop it
            // before its files go.
            if dir.join("postmaster.pid").exists() {
                let _ = server_command(&bin, as_postgres, tmp.path(), "pg_ctl")
                    .arg("-D")
                    .arg(&dir)
                    .args(["-m", "immediate", "-w", "-t", "60", "stop"])
                    .output();
            }
            std::fs::remove_dir_all(&dir).map_err(|e| LabError::new(format!("remove {}: {e}", dir.display())))?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| LabError::new(format!("create {}: {e}", dir.display())))?;
        let mut data = dir.clone();
        if as_postgres {
            chown_to_postgres(&dir)?;
            let reachable = Command::new("runuser")
                .args(["-u", "postgres", "--", "test", "-w"])
                .arg(&dir)
                .current_dir(tmp.path())
                .stdin(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !reachable {
                let _ = std::fs::remove_dir(&dir);
                data = tmp.path().join("data");
            }
        }

        let mut server = PostgresServer { bin, data, tmp, port: 0, as_postgres, version: String::new() };
        server.init()?;
        server.launch()?;
        let mut client = server.connect("postgres")?;
        let version = client.simple_query("SHOW server_version").map_err(error)?;
        // "15.14 (Debian 15.14-0+deb12u1)" → "15.14".
        server.version = version
            .iter()
            .find_map(|m| match m {
                postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
                _ => None,
            })
            .and_then(|v| v.split_whitespace().next().map(str::to_string))
            .unwrap_or_default();
        Ok(server)
    }

    /// The server's version, e.g. "15.14".
    pub fn version(&self) -> String {
        self.version.clone()
    }

    /// A fresh, empty database (an old one of that name is dropped first) and a
    /// connection to it.
    pub fn create_database(&self, name: &str) -> LabResult<PostgresEngine> {
        let mut maintenance = self.connect("postgres")?;
        let quoted = quote_ident(name);
        // FORCE: a leftover connection to the old database must not keep it alive.
        maintenance.batch_execute(&format!("DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")).map_err(error)?;
        maintenance.batch_execute(&format!("CREATE DATABASE {quoted}")).map_err(error)?;
        drop(maintenance);
        PostgresEngine::connect(self.config(name), Durability::Full)
    }

    /// The directory holding the server's unix socket.
    pub fn socket_dir(&self) -> &Path {
        self.tmp.path()
    }

    /// The port, which names the socket file (`.s.PGSQL.<port>`); the server does
    /// not listen on TCP.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The socket file clients connect to.
    pub fn socket_path(&self) -> PathBuf {
        self.socket_dir().join(format!(".s.PGSQL.{}", self.port))
    }

    /// The cluster's data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// The server's log file (removed with the server).
    pub fn log_path(&self) -> PathBuf {
        self.tmp.path().join("server.log")
    }

    fn config(&self, dbname: &str) -> Config {
        let mut config = Config::new();
        config
            .host_path(self.socket_dir())
            .port(self.port)
            .user("postgres")
            .dbname(dbname)
            // Timestamps with time zone are decoded here as UTC: make the server agree.
            .options("-c TimeZone=UTC")
            .connect_timeout(Duration::from_secs(30));
        config
    }

    fn connect(&self, dbname: &str) -> LabResult<Client> {
        self.config(dbname).connect(NoTls).map_err(error)
    }

    /// A server command, as the `postgres` user when we are root.
    fn command(&self, program: &str) -> Command {
        server_command(&self.bin, self.as_postgres, self.tmp.path(), program)
    }

    /// What could not be run, for an error message.
    fn describe(&self, program: &str) -> String {
        let path = self.bin.join(program);
        if self.as_postgres { format!("runuser -u postgres -- {}", path.display()) } else { path.display().to_string() }
    }

    fn init(&self) -> LabResult<()> {
        let output = self
            .command("initdb")
            .arg("-D")
            .arg(&self.data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale"])
            // The cluster is rebuilt for every run: syncing its template files is
            // wasted time (everything written later is synced as usual).
            .arg("--no-sync")
            .output()
            .map_err(|e| LabError::new(format!("run {}: {e}", self.describe("initdb"))))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(LabError::new(format!("initdb failed: {}", output_text(&output))))
        }
    }

    fn launch(&mut self) -> LabResult<()> {
        self.port = free_port(self.socket_dir());
        let options = format!(
            "-k {} -p {} -c listen_addresses='' -c fsync=on -c shared_buffers=256MB \
             -c max_wal_size=4GB -c checkpoint_timeout=30min",
            self.socket_dir().display(),
            self.port
        );
        let output = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(self.log_path())
            .args(["-w", "-t", "120", "-o", &options, "start"])
            // pg_ctl's server inherits these: the lab must not wait on them.
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| LabError::new(format!("run {}: {e}", self.describe("pg_ctl"))))?;
        if output.status.success() {
            return Ok(());
        }
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect::<Vec<_>>().into_iter().rev().collect();
        Err(LabError::new(format!("pg_ctl start failed: {}; server log:\n{}", output_text(&output), tail.join("\n"))))
    }
}

impl Drop for PostgresServer {
    /// Stops the server (fast: open sessions are ended), then the temporary
    /// directory goes (the field drops after this).
    fn drop(&mut self) {
        if self.port == 0 {
            return;
        }
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "fast", "-w", "-t", "60", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The directory of the server programs: where `initdb` on the PATH really lives
/// (Debian links it from `/usr/lib/postgresql/<v>/bin`), else the newest
/// `/usr/lib/postgresql/*/bin`.
fn find_bin_dir() -> LabResult<PathBuf> {
    let complete = |dir: &Path| ["initdb", "pg_ctl", "postgres"].iter().all(|p| dir.join(p).is_file());
    if let Some(path) = std::env::var_os("PATH") {
        for entry in std::env::split_paths(&path) {
            let initdb = entry.join("initdb");
            if let Ok(real) = std::fs::canonicalize(&initdb)
                && let Some(dir) = real.parent()
                && complete(dir)
            {
                return Ok(dir.to_path_buf());
            }
        }
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let version: Option<Vec<u32>> = name.split('.').map(|p| p.parse().ok()).collect();
            Some((version?, e.path().join("bin")))
        })
        .filter(|(_, dir)| complete(dir))
        .collect();
    versions.sort();
    versions.pop().map(|(_, dir)| dir).ok_or_else(|| {
        LabError::new("no PostgreSQL server programs (initdb, pg_ctl, postgres) on the PATH or in /usr/lib/postgresql")
    })
}

/// A server program, run as the `postgres` user via `runuser` when we are root,
/// from `cwd` (the server user may not be able to enter our working directory).
fn server_command(bin: &Path, as_postgres: bool, cwd: &Path, program: &str) -> Command {
    let path = bin.join(program);
    let mut command = if as_postgres {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(path);
        c
    } else {
        Command::new(path)
    };
    command.current_dir(cwd).stdin(Stdio::null());
    command
}

/// `id -u` says 0. (Asked of `id` so the lab needs no libc binding.)
fn running_as_root() -> LabResult<bool> {
    let output = Command::new("id").arg("-u").output().map_err(|e| LabError::new(format!("run id -u: {e}")))?;
    Ok(String::from_utf8_lossy(&output.stdout).trim() == "0")
}

fn set_mode_0755(path: &Path) -> LabResult<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| LabError::new(format!("chmod {}: {e}", path.display())))
}

fn chown_to_postgres(path: &Path) -> LabResult<()> {
    let output = Command::new("chown")
        .args(["-R", "postgres:"])
        .arg(path)
        .output()
        .map_err(|e| LabError::new(format!("run chown: {e}")))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(LabError::new(format!(
            "chown -R postgres: {} failed (running as root needs a postgres system user): {}",
            path.display(),
            output_text(&output)
        )))
    }
}

fn output_text(output: &Output) -> String {
    let mut text = String::from_utf8_lossy(&output.stderr).trim().to_string();
    let stdout = String::from_utf8_lossy(&output.stdout);
    if text.is_empty() {
        text = stdout.trim().to_string();
    }
    if text.is_empty() { format!("{}", output.status) } else { text }
}

/// A port whose socket file does not exist yet in our (private) socket directory.
/// Nothing else can listen there, so any free name will do; the range keeps clear
/// of the usual 5432.
fn free_port(socket_dir: &Path) -> u16 {
    let start = 54000 + rand::random_range(0..1000u16);
    (0..1000u16)
        .map(|i| 54000 + (start - 54000 + i) % 1000)
        .find(|p| !socket_dir.join(format!(".s.PGSQL.{p}")).exists())
        .unwrap_or(start)
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn error(e: postgres::Error) -> LabError {
    match e.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            let mut text = format!("{} (SQLSTATE {code})", db.message());
            // Detail and context ("COPY t, line 2, column i: …") say where.
            for extra in [db.detail(), db.where_()].into_iter().flatten() {
                text.push_str("; ");
                text.push_str(extra);
            }
            // Serialization failure and deadlock: the transaction can be retried.
            if matches!(code, "40001" | "40P01") {
                LabError::retryable(text)
            } else if code == "57014" {
                LabError::timed_out(text)
            } else {
                LabError::new(text)
            }
        }
        None => {
            let mut text = e.to_string();
            if let Some(source) = e.source() {
                text.push_str(": ");
                text.push_str(&source.to_string());
            }
            LabError::new(text)
        }
    }
}

/// An I/O error from the COPY writer carries the client's error inside.
fn io_error(e: std::io::Error) -> LabError {
    match e.get_ref().and_then(|inner| inner.downcast_ref::<postgres::Error>()) {
        Some(_) => match e.into_inner().map(|inner| inner.downcast::<postgres::Error>()) {
            Some(Ok(pg)) => error(*pg),
            _ => LabError::new("COPY failed"),
        },
        None => LabError::new(format!("COPY: {e}")),
    }
}

/// One connection to one database of the lab's server.
pub struct PostgresEngine {
    client: Client,
    config: Config,
    durability: Durability,
    /// Parameterized statements are prepared once, as an application would.
    prepared: HashMap<String, Statement>,
}

impl PostgresEngine {
    fn connect(config: Config, durability: Durability) -> LabResult<PostgresEngine> {
        let client = config.connect(NoTls).map_err(error)?;
        let mut engine = PostgresEngine { client, config, durability, prepared: HashMap::new() };
        engine.set_durability(durability)?;
        Ok(engine)
    }

    /// The connection, for workloads that need more than [`Engine`] offers.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// A parameter sent in text format: the server parses it as the type it inferred
/// for the `$n` (int4, numeric, date, …), as it does for libpq's parameters. The
/// crate's binary encodings would need the exact Rust type for each SQL type, and
/// have none for NUMERIC.
#[derive(Debug)]
struct TextParam(String);

impl ToSql for TextParam {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(self.0.as_bytes());
        Ok(postgres::types::IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> postgres::types::Format {
        postgres::types::Format::Text
    }

    postgres::types::to_sql_checked!();
}

fn is_integer_type(ty: &Type) -> bool {
    matches!(*ty, Type::INT2 | Type::INT4 | Type::INT8 | Type::OID)
}

/// A parameter's text for the type the server expects.
fn text_param(p: &Param, ty: &Type) -> TextParam {
    TextParam(match p {
        Param::Int(v) => v.to_string(),
        // An integral float for an integer parameter: "3", not "3.0" (int4in
        // refuses the latter).
        Param::Float(v) if is_integer_type(ty) && v.fract() == 0.0 && v.abs() < 9.2e18 => (*v as i64).to_string(),
        Param::Float(v) if v.is_nan() => "NaN".to_string(),
        Param::Float(v) if v.is_infinite() => if *v > 0.0 { "Infinity" } else { "-Infinity" }.to_string(),
        // Debug: the shortest text that reads back as the same double.
        Param::Float(v) => format!("{v:?}"),
        Param::Text(s) => s.clone(),
    })
}

/// A column's raw binary value, whatever its type; [`cell`] decodes it.
struct Raw<'a>(&'a [u8]);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_ty: &Type, raw: &'a [u8]) -> Result<Raw<'a>, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(raw))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

fn be<const N: usize>(raw: &[u8]) -> Option<[u8; N]> {
    raw.get(..N)?.try_into().ok()
}

/// A binary value in the lab's common form. Numbers become numbers (NUMERIC as
/// BeeDB's DECIMAL: an integer when integral, else a float), booleans 0/1, text
/// text, and dates and times the text PostgreSQL would print for them.
fn cell(ty: &Type, raw: &[u8]) -> Cell {
    decode(ty, raw).unwrap_or_else(|| hex(raw))
}

fn hex(raw: &[u8]) -> Cell {
    let mut text = String::from("\\x");
    for b in raw {
        text.push_str(&format!("{b:02x}"));
    }
    Cell::Text(text)
}

fn text(raw: &[u8]) -> Cell {
    Cell::Text(String::from_utf8_lossy(raw).into_owned())
}

fn decode(ty: &Type, raw: &[u8]) -> Option<Cell> {
    match ty.kind() {
        Kind::Domain(inner) => return decode(inner, raw),
        Kind::Enum(_) => return Some(text(raw)),
        _ => {}
    }
    Some(match *ty {
        Type::BOOL => Cell::Int((*raw.first()? != 0) as i64),
        Type::CHAR => Cell::Int(i8::from_be_bytes(be(raw)?) as i64),
        Type::INT2 => Cell::Int(i16::from_be_bytes(be(raw)?) as i64),
        Type::INT4 => Cell::Int(i32::from_be_bytes(be(raw)?) as i64),
        Type::OID => Cell::Int(u32::from_be_bytes(be(raw)?) as i64),
        Type::INT8 => Cell::Int(i64::from_be_bytes(be(raw)?)),
        Type::FLOAT4 => Cell::Float(f32::from_be_bytes(be(raw)?) as f64),
        Type::FLOAT8 => Cell::Float(f64::from_be_bytes(be(raw)?)),
        Type::NUMERIC => {
            let f: f64 = numeric_text(raw)?.parse().ok()?;
            // BeeDB's rule for DECIMAL, so that the engines' answers compare.
            if f.fract() == 0.0 && f.abs() < 9.0e15 { Cell::Int(f as i64) } else { Cell::Float(f) }
        }
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::JSON | Type::XML => text(raw),
        // Binary JSONB is a version byte, then the text.
        Type::JSONB => text(raw.get(1..)?),
        Type::DATE => Cell::Text(date_text(i32::from_be_bytes(be(raw)?))),
        Type::TIME => Cell::Text(time_text(i64::from_be_bytes(be(raw)?))),
        Type::TIMESTAMP => Cell::Text(timestamp_text(i64::from_be_bytes(be(raw)?), "")),
        Type::TIMESTAMPTZ => Cell::Text(timestamp_text(i64::from_be_bytes(be(raw)?), "+00")),
        Type::INTERVAL => {
            let micros = i64::from_be_bytes(be(raw)?);
            let days = i32::from_be_bytes(be(raw.get(8..)?)?);
            let months = i32::from_be_bytes(be(raw.get(12..)?)?);
            Cell::Text(interval_text(months, days, micros))
        }
        Type::UUID => {
            let h: String = raw.iter().map(|b| format!("{b:02x}")).collect();
            if h.len() != 32 {
                return None;
            }
            Cell::Text(format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]))
        }
        _ if ty.name() == "citext" => text(raw),
        _ => return None,
    })
}

/// NUMERIC's binary form (base-10000 digits, weight, sign, display scale) as the
/// decimal text PostgreSQL prints.
fn numeric_text(raw: &[u8]) -> Option<String> {
    let ndigits = i16::from_be_bytes(be(raw)?).max(0) as usize;
    let weight = i16::from_be_bytes(be(raw.get(2..)?)?) as i64;
    let sign = u16::from_be_bytes(be(raw.get(4..)?)?);
    let dscale = u16::from_be_bytes(be(raw.get(6..)?)?) as usize;
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        _ => {}
    }
    let digits: Vec<i16> =
        (0..ndigits).map(|i| raw.get(8 + 2 * i..).and_then(be).map(i16::from_be_bytes)).collect::<Option<_>>()?;
    let digit = |i: i64| if i >= 0 && (i as usize) < digits.len() { digits[i as usize] } else { 0 };
    let mut out = String::new();
    if sign == 0x4000 {
        out.push('-');
    }
    if weight < 0 {
        out.push('0');
    } else {
        for i in 0..=weight {
            if i == 0 {
                out.push_str(&digit(i).to_string());
            } else {
                out.push_str(&format!("{:04}", digit(i)));
            }
        }
    }
    if dscale > 0 {
        let mut fraction = String::new();
        let mut i = weight + 1;
        while fraction.len() < dscale {
            fraction.push_str(&format!("{:04}", digit(i)));
            i += 1;
        }
        fraction.truncate(dscale);
        out.push('.');
        out.push_str(&fraction);
    }
    Some(out)
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + (m <= 2) as i64;
    (y, m, d)
}

/// Days between 1970-01-01 and PostgreSQL's epoch, 2000-01-01.
const PG_EPOCH_DAYS: i64 = 10_957;
const MICROS_PER_DAY: i64 = 86_400_000_000;

/// "YYYY-MM-DD", or "YYYY-MM-DD BC" (PostgreSQL has no year 0).
fn ymd(days_since_2000: i64) -> (String, bool) {
    let (y, m, d) = civil_from_days(days_since_2000 + PG_EPOCH_DAYS);
    if y <= 0 { (format!("{:04}-{m:02}-{d:02}", 1 - y), true) } else { (format!("{y:04}-{m:02}-{d:02}"), false) }
}

fn date_text(days: i32) -> String {
    match days {
        i32::MAX => "infinity".into(),
        i32::MIN => "-infinity".into(),
        _ => {
            let (text, bc) = ymd(days as i64);
            if bc { format!("{text} BC") } else { text }
        }
    }
}

/// "HH:MM:SS" and a fraction without trailing zeros, if any.
fn time_text(micros: i64) -> String {
    let seconds = micros / 1_000_000;
    let mut text = format!("{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60);
    push_fraction(&mut text, micros % 1_000_000);
    text
}

fn push_fraction(text: &mut String, micros: i64) {
    if micros != 0 {
        let fraction = format!(".{:06}", micros.abs());
        text.push_str(fraction.trim_end_matches('0'));
    }
}

fn timestamp_text(micros: i64, zone: &str) -> String {
    match micros {
        i64::MAX => "infinity".into(),
        i64::MIN => "-infinity".into(),
        _ => {
            let (date, bc) = ymd(micros.div_euclid(MICROS_PER_DAY));
            let time = time_text(micros.rem_euclid(MICROS_PER_DAY));
            format!("{date} {time}{zone}{}", if bc { " BC" } else { "" })
        }
    }
}

/// An interval as PostgreSQL prints it in its default style ("postgres"):
/// "1 year 2 mons -3 days +04:05:06.5".
fn interval_text(months: i32, days: i32, micros: i64) -> String {
    let mut out = String::new();
    let mut is_zero = true;
    let mut is_before = false;
    let years = months / 12;
    for (value, unit) in [(years as i64, "year"), ((months % 12) as i64, "mon"), (days as i64, "day")] {
        if value == 0 {
            continue;
        }
        let space = if is_zero { "" } else { " " };
        let plus = if is_before && value > 0 { "+" } else { "" };
        let plural = if value != 1 { "s" } else { "" };
        out.push_str(&format!("{space}{plus}{value} {unit}{plural}"));
        is_before = value < 0;
        is_zero = false;
    }
    if is_zero || micros != 0 {
        let sign = if micros < 0 {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        };
        let space = if is_zero { "" } else { " " };
        let abs = micros.unsigned_abs();
        let seconds = abs / 1_000_000;
        out.push_str(&format!("{space}{sign}{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60));
        push_fraction(&mut out, (abs % 1_000_000) as i64);
    }
    out
}

/// The statement's first word, to tell DML (whose RETURNING rows still count as
/// rows affected) from queries.
fn first_keyword(sql: &str) -> String {
    sql.trim_start_matches(|c: char| c.is_whitespace() || c == '(')
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_uppercase()
}

fn cells(rows: &[Row]) -> LabResult<Vec<Vec<Cell>>> {
    rows.iter()
        .map(|row| {
            row.columns()
                .iter()
                .enumerate()
                .map(|(i, column)| {
                    let raw: Option<Raw<'_>> = row.try_get(i).map_err(error)?;
                    Ok(raw.map_or(Cell::Null, |r| cell(column.type_(), r.0)))
                })
                .collect()
        })
        .collect()
}

impl Engine for PostgresEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Postgres
    }

    /// Without parameters: one round trip (parse, bind, describe, execute, sync),
    /// binary answers with their types. With parameters: a statement prepared on
    /// first use, then one bind/execute round trip per run.
    fn run(&mut self, sql: &str, params: &[Param]) -> LabResult<Outcome> {
        let start = Instant::now();
        let mut fetched = Vec::new();
        let affected = if params.is_empty() {
            let none: Vec<(&(dyn ToSql + Sync), Type)> = Vec::new();
            let mut it = self.client.query_typed_raw(sql, none).map_err(error)?;
            while let Some(row) = postgres::fallible_iterator::FallibleIterator::next(&mut it).map_err(error)? {
                fetched.push(row);
            }
            it.rows_affected().unwrap_or(0)
        } else {
            let statement = match self.prepared.get(sql) {
                Some(s) => s.clone(),
                None => {
                    let s = self.client.prepare(sql).map_err(error)?;
                    self.prepared.insert(sql.to_string(), s.clone());
                    s
                }
            };
            if statement.params().len() != params.len() {
                return Err(LabError::new(format!(
                    "the statement takes {} parameters, {} given: {sql}",
                    statement.params().len(),
                    params.len()
                )));
            }
            let values: Vec<TextParam> =
                params.iter().zip(statement.params()).map(|(p, ty)| text_param(p, ty)).collect();
            let mut it = self.client.query_raw(&statement, values.iter()).map_err(error)?;
            while let Some(row) = postgres::fallible_iterator::FallibleIterator::next(&mut it).map_err(error)? {
                fetched.push(row);
            }
            it.rows_affected().unwrap_or(0)
        };
        let elapsed = start.elapsed();
        // A query's count is of rows returned, not affected (DML's RETURNING aside).
        let dml = matches!(first_keyword(sql).as_str(), "INSERT" | "UPDATE" | "DELETE" | "MERGE" | "COPY");
        let affected = if dml || fetched.is_empty() { affected } else { 0 };
        Ok(Outcome { elapsed, rows: cells(&fetched)?, affected })
    }

    fn begin_write(&mut self) -> LabResult<()> {
        self.run("BEGIN", &[]).map(|_| ())
    }

    fn set_durability(&mut self, durability: Durability) -> LabResult<()> {
        self.durability = durability;
        let setting = match durability {
            Durability::Full => "on",
            Durability::Normal => "off",
        };
        self.client.batch_execute(&format!("SET synchronous_commit = {setting}")).map_err(error)
    }

    /// `COPY … FROM STDIN` in text format, the file streamed in large chunks.
    fn bulk_load(&mut self, table: &str, file: &Path) -> LabResult<u64> {
        let mut input = File::open(file).map_err(|e| LabError::new(format!("{}: {e}", file.display())))?;
        let sql = format!("COPY {table} FROM STDIN WITH (FORMAT text, DELIMITER '|')");
        let mut writer = self.client.copy_in(&sql).map_err(error)?;
        let mut chunk = vec![0u8; 256 << 10];
        loop {
            let n = input.read(&mut chunk).map_err(|e| LabError::new(format!("{}: {e}", file.display())))?;
            if n == 0 {
                break;
            }
            // Dropping the writer unfinished aborts the COPY.
            writer.write_all(&chunk[..n]).map_err(io_error)?;
        }
        writer.finish().map_err(error)
    }

    fn bytes_on_disk(&mut self) -> LabResult<u64> {
        self.client.batch_execute("CHECKPOINT").map_err(error)?;
        let row = self.client.query_one("SELECT pg_database_size(current_database())", &[]).map_err(error)?;
        let size: i64 = row.try_get(0).map_err(error)?;
        Ok(size.max(0) as u64)
    }

    fn connect_another(&self) -> LabResult<Box<dyn Engine>> {
        Ok(Box::new(PostgresEngine::connect(self.config.clone(), self.durability)?))
    }

    fn explain_analyze(&mut self, sql: &str) -> LabResult<Option<String>> {
        super::explain_analyze_text(self, sql)
    }

    /// PostgreSQL's `statement_timeout` (SQLSTATE 57014 when it fires).
    fn set_statement_timeout(&mut self, timeout: Option<Duration>) -> LabResult<()> {
        let ms = timeout.map_or(0, |t| t.as_millis().max(1));
        self.client.batch_execute(&format!("SET statement_timeout = {ms}")).map_err(error)
    }

    /// Parallel query: the backend plus `threads - 1` workers per Gather.
    fn set_threads(&mut self, threads: usize) -> LabResult<String> {
        let workers = threads.max(1) - 1;
        self.client
            .batch_execute(&format!("SET max_parallel_workers_per_gather = {workers}"))
            .map_err(error)?;
        Ok(format!("postgres: max_parallel_workers_per_gather = {workers}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(weight: i16, sign: u16, dscale: u16, digits: &[i16]) -> Vec<u8> {
        let mut raw = Vec::new();
        raw.extend((digits.len() as i16).to_be_bytes());
        raw.extend(weight.to_be_bytes());
        raw.extend(sign.to_be_bytes());
        raw.extend(dscale.to_be_bytes());
        for d in digits {
            raw.extend(d.to_be_bytes());
        }
        raw
    }

    #[test]
    fn numerics_decode_as_postgres_prints_them() {
        assert_eq!(numeric_text(&numeric(0, 0, 2, &[12, 3400])).as_deref(), Some("12.34"));
        assert_eq!(numeric_text(&numeric(1, 0x4000, 0, &[1, 2])).as_deref(), Some("-10002"));
        assert_eq!(numeric_text(&numeric(-1, 0, 3, &[50])).as_deref(), Some("0.005"));
        assert_eq!(numeric_text(&numeric(0, 0, 0, &[])).as_deref(), Some("0"));
        assert_eq!(numeric_text(&numeric(2, 0, 2, &[1])).as_deref(), Some("100000000.00"));
        assert_eq!(numeric_text(&numeric(0, 0xC000, 0, &[])).as_deref(), Some("NaN"));
        assert_eq!(cell(&Type::NUMERIC, &numeric(0, 0, 2, &[3])), Cell::Int(3));
        assert_eq!(cell(&Type::NUMERIC, &numeric(0, 0, 2, &[12, 3400])), Cell::Float(12.34));
    }

    #[test]
    fn dates_and_times_decode_as_postgres_prints_them() {
        assert_eq!(date_text(0), "2000-01-01");
        assert_eq!(date_text(-1), "1999-12-31");
        assert_eq!(date_text(8766), "2024-01-01");
        assert_eq!(date_text(-730_119), "0001-01-01");
        assert_eq!(date_text(-730_120), "0001-12-31 BC");
        assert_eq!(timestamp_text(1_500_000, ""), "2000-01-01 00:00:01.5");
        assert_eq!(timestamp_text(-1, "+00"), "1999-12-31 23:59:59.999999+00");
        assert_eq!(time_text(3_723_000_000), "01:02:03");
        assert_eq!(interval_text(0, 0, 0), "00:00:00");
        assert_eq!(interval_text(14, 3, 0), "1 year 2 mons 3 days");
        assert_eq!(interval_text(0, -1, 3_600_000_000), "-1 days +01:00:00");
        assert_eq!(interval_text(1, 0, -1_500_000), "1 mon -00:00:01.5");
    }

    #[test]
    fn parameters_are_text_for_the_inferred_type() {
        assert_eq!(text_param(&Param::Float(3.0), &Type::INT4).0, "3");
        assert_eq!(text_param(&Param::Float(3.0), &Type::FLOAT8).0, "3.0");
        assert_eq!(text_param(&Param::Float(0.1), &Type::NUMERIC).0, "0.1");
        assert_eq!(text_param(&Param::Float(f64::NEG_INFINITY), &Type::FLOAT8).0, "-Infinity");
        assert_eq!(text_param(&Param::Int(-7), &Type::NUMERIC).0, "-7");
    }

    #[test]
    fn first_keywords() {
        assert_eq!(first_keyword("  (select 1)"), "SELECT");
        assert_eq!(first_keyword("update t set a = 1"), "UPDATE");
    }
}
