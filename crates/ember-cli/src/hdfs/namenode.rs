//! Finding, listing and opening HDFS files: the namenode's part, done
//! before the run, each request bounded by [`NAMENODE_TIMEOUT`].

use std::collections::HashMap;
use std::future::Future;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use hdfs_native::client::FileStatus;
use hdfs_native::{Client, ClientBuilder, HdfsError};

use super::reader::{Io, RangeReader};
use super::{is_url, Url};

/// How long one request to the namenode (a file's status, a folder's
/// listing, a file's block locations) may take, connecting included.
const NAMENODE_TIMEOUT: Duration = Duration::from_secs(15);

/// A part of the input: its name, its reader and its length.
type Part = (PathBuf, Box<dyn Read + Send>, Option<u64>);

/// Opens `args` (HDFS URLs and local files) as one streamed input, in
/// order; a folder URL gives the files under it, sorted by path.
pub(super) fn open(args: &[PathBuf]) -> Result<ember::Input<'static>> {
    let io = Arc::new(Io::start()?);
    let mut clients: HashMap<String, Client> = HashMap::new();
    let mut parts: Vec<Part> = Vec::new();
    for arg in args {
        if !is_url(arg) {
            parts.push(local(arg)?);
            continue;
        }
        // A URL is UTF-8 (`is_url`).
        let url = Url::parse(&arg.to_string_lossy())?;
        let client = match clients.get(&url.authority) {
            Some(c) => c.clone(),
            None => {
                let c = connect(&io, &url).with_context(|| cannot(arg))?;
                clients.insert(url.authority.clone(), c.clone());
                c
            }
        };
        let node = Namenode {
            io: &io,
            client: &client,
            url: &url,
        };
        for (path, len) in node.files(arg)? {
            let name = PathBuf::from(format!("hdfs://{}{path}", url.authority));
            let file = node.ask(&name, client.read(&path))?;
            let reader = RangeReader::new(file, Arc::clone(&io));
            parts.push((name, Box::new(reader), Some(len)));
        }
    }
    Ok(ember::Input::readers_decompressed(parts)?)
}

/// A local file beside HDFS URLs: streamed like them.
fn local(path: &Path) -> Result<Part> {
    let file = std::fs::File::open(path).map_err(|e| ember::Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| ember::Error::io(path, e))?;
    if meta.is_dir() {
        return Err(ember::Error::IsDirectory {
            path: path.to_path_buf(),
        }
        .into());
    }
    Ok((path.to_path_buf(), Box::new(file), Some(meta.len())))
}

/// A client for the URL's namenode (no request is made yet). With an
/// explicit port there is one namenode: a request that cannot reach it
/// is tried again twice, not the fifteen times of the client's default,
/// so that a namenode that is down is reported in seconds.
fn connect(io: &Io, url: &Url) -> Result<Client> {
    let mut b = ClientBuilder::new().with_io_runtime(io.handle());
    if !url.authority.is_empty() {
        b = b.with_url(format!("hdfs://{}", url.authority));
    }
    if url.authority.contains(':') {
        b = b.with_config([("dfs.client.failover.max.attempts", "2")]);
    }
    b.build().map_err(|e| anyhow!(describe(e, &url.authority)))
}

/// The requests of one URL to its namenode.
struct Namenode<'a> {
    io: &'a Io,
    client: &'a Client,
    url: &'a Url,
}

impl Namenode<'_> {
    /// The files the URL names, with their lengths: itself, or for a
    /// folder every file under it (recursively, sorted by path, leaving
    /// out names that start with `_` or `.`, as Hadoop's input formats
    /// do: `_SUCCESS`, `.crc` files). A folder without files is an error.
    fn files(&self, arg: &Path) -> Result<Vec<(String, u64)>> {
        let path = &self.url.path;
        let status = self.ask(arg, self.client.get_file_info(path))?;
        if !status.isdir {
            return Ok(vec![(path.clone(), status.length as u64)]);
        }
        let listed = self.ask(arg, self.client.list_status(path, true))?;
        let mut files: Vec<(String, u64)> = listed
            .into_iter()
            .filter(|s| !s.isdir && !hidden(path, s))
            .map(|s| (s.path, s.length as u64))
            .collect();
        if files.is_empty() {
            bail!("no input files: folder '{}' holds no files", arg.display());
        }
        files.sort();
        Ok(files)
    }

    /// Runs one request to the namenode for the input `name`, within
    /// [`NAMENODE_TIMEOUT`]; an error names the input.
    fn ask<T>(
        &self,
        name: &Path,
        request: impl Future<Output = hdfs_native::Result<T>>,
    ) -> Result<T> {
        let authority = &self.url.authority;
        // The timer is made inside the runtime, which drives it.
        let bounded = async { tokio::time::timeout(NAMENODE_TIMEOUT, request).await };
        match self.io.block_on(bounded) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(anyhow!("{}: {}", cannot(name), describe(e, authority))),
            Err(_) => Err(anyhow!(
                "{}: no answer from the namenode {} within {} s",
                cannot(name),
                shown(authority),
                NAMENODE_TIMEOUT.as_secs()
            )),
        }
    }
}

/// True when a name below the listed folder `dir` starts with `_` or `.`.
fn hidden(dir: &str, status: &FileStatus) -> bool {
    let below = status.path.strip_prefix(dir).unwrap_or(&status.path);
    below
        .split('/')
        .any(|name| name.starts_with('_') || name.starts_with('.'))
}

/// The start of an error about the input `name`.
fn cannot(name: &Path) -> String {
    format!("cannot read '{}'", name.display())
}

/// The namenode as errors name it.
fn shown(authority: &str) -> &str {
    match authority {
        "" => "of fs.defaultFS",
        a => a,
    }
}

/// What HDFS said, in one line: a missing path as the OS says it, a
/// permission error as the namenode words it (user, access, inode), a
/// failed connection naming the namenode; Java's stack traces left out.
pub(super) fn describe(e: HdfsError, authority: &str) -> String {
    let first = |s: &str| s.lines().next().unwrap_or("").trim().to_string();
    match e {
        HdfsError::FileNotFound(_) => "No such file or directory".into(),
        HdfsError::RPCError(class, msg) | HdfsError::FatalRPCError(class, msg) => {
            match class.rsplit('.').next().unwrap_or(&class) {
                "AccessControlException" => first(&msg),
                "FileNotFoundException" => "No such file or directory".into(),
                short => format!("{short}: {}", first(&msg)),
            }
        }
        HdfsError::IOError(e) => {
            format!("cannot reach the namenode {}: {e}", shown(authority))
        }
        HdfsError::InvalidArgument(m) if m.contains("No NameNode hosts") => format!(
            "'{authority}' is no nameservice of the Hadoop configuration \
             (give the namenode's port: hdfs://{authority}:8020/...)"
        ),
        other => first(&other.to_string()),
    }
}
