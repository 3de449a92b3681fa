//! `hdfs://` input: files and folders of HDFS read with a native client
//! (the `hdfs-native` crate: no JVM, no libhdfs), behind the `hdfs` cargo
//! feature. See `docs/hdfs.md`.
//!
//! An input that names an HDFS URL is streamed: every file (a URL's own,
//! or each file under a URL's folder, and local files given beside them)
//! becomes one part of an [`ember::Input::readers_decompressed`] input
//! (decoded if its first bytes say it is compressed), read in chunks
//! while earlier chunks are mapped. Within a file, the reader fetches the
//! next range of 8 MiB while the current one is consumed (`reader`).
//! Everything that asks the namenode (finding, listing and opening the
//! files) happens before the run, 15 s at most per request (`namenode`).

use std::path::{Path, PathBuf};

use anyhow::Result;

#[cfg(feature = "hdfs")]
mod namenode;
#[cfg(feature = "hdfs")]
mod reader;

/// True when a command-line input names HDFS (`hdfs:...`): it is then
/// parsed as a URL, and a malformed one is an error, not a local path.
pub(crate) fn is_url(arg: &Path) -> bool {
    arg.to_str().is_some_and(|s| s.starts_with("hdfs:"))
}

/// An `hdfs://` URL, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Url {
    /// `HOST:PORT`, a nameservice of the Hadoop configuration, or empty
    /// for the configuration's `fs.defaultFS`.
    pub(crate) authority: String,
    /// The absolute path in the file system (`/` when the URL has none).
    pub(crate) path: String,
}

impl Url {
    /// Parses `hdfs://HOST:PORT/PATH`, `hdfs://NAMESERVICE/PATH` or
    /// `hdfs:///PATH`; the error says what is wrong, in one line.
    pub(crate) fn parse(arg: &str) -> Result<Url> {
        let bad = |why: &str| {
            anyhow::anyhow!(
                "malformed HDFS URL '{arg}': {why} (expected hdfs://HOST:PORT/PATH, \
                 hdfs://NAMESERVICE/PATH or hdfs:///PATH)"
            )
        };
        let rest = arg
            .strip_prefix("hdfs://")
            .ok_or_else(|| bad("it does not start with hdfs://"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, "/"),
        };
        if authority.contains('@') {
            return Err(bad(
                "user names in URLs are not supported (set HADOOP_USER_NAME)",
            ));
        }
        if authority.contains(['?', '#']) || path.contains(['?', '#']) {
            return Err(bad("queries and fragments are not supported"));
        }
        check_authority(authority).map_err(|why| bad(&why))?;
        Ok(Url {
            authority: authority.to_string(),
            path: path.to_string(),
        })
    }
}

/// Checks `HOST`, `HOST:PORT` or `[IPV6]:PORT` (or nothing at all).
fn check_authority(authority: &str) -> Result<(), String> {
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, rest) = v6
                .split_once(']')
                .ok_or("an IPv6 address without its closing ']'")?;
            match rest {
                "" => (host, None),
                _ => (host, Some(rest.strip_prefix(':').ok_or("junk after ']'")?)),
            }
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let host_char = |c: char| c.is_ascii_alphanumeric() || "-._:".contains(c);
    if host.is_empty() && port.is_some() {
        return Err("a port without a host".into());
    }
    if !host.chars().all(host_char) {
        return Err(format!("'{host}' is not a host name"));
    }
    match port.map(str::parse::<u16>) {
        Some(Ok(0)) | Some(Err(_)) => Err(format!("'{}' is not a port", port.unwrap_or(""))),
        _ => Ok(()),
    }
}

/// Opens the inputs `args` as one streamed input: HDFS URLs (a folder
/// gives its files, see [`namenode`]) and local files, in order.
#[cfg(feature = "hdfs")]
pub(crate) fn open(args: &[PathBuf]) -> Result<ember::Input<'static>> {
    namenode::open(args)
}

/// Without the `hdfs` feature: the error that says how to get it.
#[cfg(not(feature = "hdfs"))]
pub(crate) fn open(args: &[PathBuf]) -> Result<ember::Input<'static>> {
    let url = args.iter().find(|a| is_url(a)).unwrap_or(&args[0]);
    Url::parse(&url.to_string_lossy())?;
    anyhow::bail!(
        "cannot read '{}': this ember was built without HDFS support \
         (build it with `cargo build --release --features hdfs`)",
        url.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(a: &str, p: &str) -> Url {
        Url {
            authority: a.into(),
            path: p.into(),
        }
    }

    #[test]
    fn urls_parse() {
        let ok = |s: &str| Url::parse(s).unwrap();
        assert_eq!(
            ok("hdfs://127.0.0.1:9000/a/b.txt"),
            url("127.0.0.1:9000", "/a/b.txt")
        );
        assert_eq!(
            ok("hdfs://nn.example.com:8020/"),
            url("nn.example.com:8020", "/")
        );
        assert_eq!(ok("hdfs://nn:8020"), url("nn:8020", "/"));
        assert_eq!(ok("hdfs://mycluster/data"), url("mycluster", "/data"));
        assert_eq!(ok("hdfs:///data/x"), url("", "/data/x"));
        assert_eq!(ok("hdfs://[::1]:9000/x"), url("[::1]:9000", "/x"));
    }

    #[test]
    fn malformed_urls_say_why() {
        for (arg, why) in [
            ("hdfs:/data", "does not start with hdfs://"),
            ("hdfs:data", "does not start with hdfs://"),
            ("hdfs://h:port/x", "'port' is not a port"),
            ("hdfs://h:99999/x", "'99999' is not a port"),
            ("hdfs://h:0/x", "'0' is not a port"),
            ("hdfs://:9000/x", "a port without a host"),
            ("hdfs://a b:9000/x", "'a b' is not a host name"),
            ("hdfs://u@h:9000/x", "user names"),
            ("hdfs://h:9000/x?y=1", "queries"),
            ("hdfs://[::1/x", "closing ']'"),
        ] {
            let err = Url::parse(arg).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("malformed HDFS URL '{arg}': ")),
                "{err}"
            );
            assert!(err.contains(why), "{arg}: {err}");
            assert_eq!(err.lines().count(), 1);
        }
    }

    #[test]
    fn only_hdfs_prefixes_are_urls() {
        assert!(is_url(Path::new("hdfs://h:1/x")));
        assert!(is_url(Path::new("hdfs:/x")));
        assert!(!is_url(Path::new("./hdfs://x")));
        assert!(!is_url(Path::new("data/hdfs.txt")));
    }
}
