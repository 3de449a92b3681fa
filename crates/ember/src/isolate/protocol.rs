//! What a parent and its workers agree on: how a worker is started, the
//! messages that give it its tasks and the replies that end them. The
//! parent's side is [`super::spawn`], [`super::supervise`] and
//! [`super::tasks`], the worker's [`super::worker`]; both import this
//! module and nothing of each other.
//!
//! A worker is started once and does task after task: the environment
//! variable [`WORKER_ENV`] holds [`PROTOCOL`], its arguments are `serve`
//! and two descriptors it inherits: the socket it reads its tasks from
//! and the pipe it writes a reply to at the end of each. A task is one
//! [`Message`]: its words (the role, `map` or `reduce`, the job's name,
//! the output channel, the form its output takes ([`form_word`]: a map of
//! a job with a binary form may write records), the role's words, then
//! the job's arguments) and
//! the variables its job sees in the environment. The channel is a
//! descriptor of the parent, which the worker opens by its name in
//! `/proc/PARENT/fd` (so a worker inherits nothing per task). A map's
//! words are the file and the split's start and end; a reduce's the
//! number of runs it merges, then each [`Run`] as `FD:START:END`, a byte
//! range of a map channel, again a descriptor of the parent. The reply is
//! one byte: [`DONE`] when the task is done, [`JOB_FAILED`] with the
//! job's error message in the channel (in place of its output) when the
//! job returned an error. A worker exits 0 when the task socket closes; a
//! worker that exits otherwise (a signal, another status) or closes its
//! reply pipe while it has a task has died, and the parent may retry the
//! task on a fresh worker.

use std::ffi::OsString;
use std::io::{self, Read};
use std::os::fd::RawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::stream::Form;

/// Set (to [`PROTOCOL`]) in a worker's environment, and only there.
pub(super) const WORKER_ENV: &str = "EMBER_ISOLATE_WORKER";
/// The protocol's version: a worker of another build of the program
/// refuses to run rather than misread its arguments.
pub(super) const PROTOCOL: &str = "4";
/// The first argument of a worker.
pub(super) const SERVE: &str = "serve";
/// A worker's reply when its task is done.
pub(super) const DONE: u8 = 0;
/// A worker's reply when the job returned an error (its message in the
/// channel).
pub(super) const JOB_FAILED: u8 = 3;
/// Set in a worker's environment to its attempt at the split: `0` for the
/// first, `1` for the first retry, ... (Hadoop's task attempt).
pub const ATTEMPT_ENV: &str = "EMBER_ISOLATE_ATTEMPT";
/// Set in a map worker's environment, for a job that numbers lines
/// ([`StreamJob::numbers_lines`](crate::stream::StreamJob::numbers_lines)),
/// to the index of its split's first line over all the run's files.
pub const FIRST_LINE_ENV: &str = "ember_map_input_first_line";

/// The word that names the form of a task's output (`text` or `binary`).
pub(super) fn form_word(form: Form) -> &'static str {
    match form {
        Form::Text => "text",
        Form::Binary => "binary",
    }
}

/// The form a word of [`form_word`] names.
pub(super) fn parse_form(word: &str) -> Option<Form> {
    [Form::Text, Form::Binary]
        .into_iter()
        .find(|&f| form_word(f) == word)
}

/// A byte range of one map channel: the pairs of a key range that one
/// mapper wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Run {
    /// The channel, a descriptor of the parent that the reduce worker
    /// opens in the parent's `/proc`.
    pub(super) fd: RawFd,
    pub(super) start: usize,
    pub(super) end: usize,
}

impl Run {
    /// The argument that names the run to a reduce worker: `FD:START:END`.
    pub(super) fn arg(&self) -> OsString {
        format!("{}:{}:{}", self.fd, self.start, self.end).into()
    }

    /// A run from its argument.
    pub(super) fn parse(arg: &str) -> Option<Run> {
        let mut parts = arg.split(':').map(str::parse::<usize>);
        let (fd, start, end) = (
            parts.next()?.ok()?,
            parts.next()?.ok()?,
            parts.next()?.ok()?,
        );
        let fd = RawFd::try_from(fd).ok()?;
        (parts.next().is_none() && start <= end).then_some(Run { fd, start, end })
    }
}

/// One task for a worker: its words and its job's environment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Message {
    pub(super) words: Vec<OsString>,
    pub(super) env: Vec<(OsString, OsString)>,
}

impl Message {
    /// The message as one frame: its length, then the words' and the
    /// variables' counts and each string, every number a `u32` (little
    /// endian) and every string its length and its bytes.
    pub(super) fn frame(&self) -> Vec<u8> {
        fn number(body: &mut Vec<u8>, n: usize) {
            body.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes())
        }
        fn string(body: &mut Vec<u8>, s: &OsString) {
            number(body, s.len());
            body.extend_from_slice(s.as_bytes());
        }
        let mut body = Vec::new();
        number(&mut body, self.words.len());
        self.words.iter().for_each(|w| string(&mut body, w));
        number(&mut body, self.env.len());
        for (name, value) in &self.env {
            string(&mut body, name);
            string(&mut body, value);
        }
        let mut frame = (body.len() as u32).to_le_bytes().to_vec();
        frame.extend_from_slice(&body);
        frame
    }

    /// The next message from `from`; `None` at its end (the parent closed
    /// the socket between messages).
    pub(super) fn read(from: &mut impl Read) -> io::Result<Option<Message>> {
        let mut len = [0; 4];
        match from.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let mut body = vec![0; u32::from_le_bytes(len) as usize];
        from.read_exact(&mut body)?;
        Message::parse(&body)
            .map(Some)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "a malformed task"))
    }

    fn parse(mut body: &[u8]) -> Option<Message> {
        fn number(body: &mut &[u8]) -> Option<usize> {
            let (n, rest) = body.split_first_chunk::<4>()?;
            *body = rest;
            Some(u32::from_le_bytes(*n) as usize)
        }
        fn string(body: &mut &[u8]) -> Option<OsString> {
            let n = number(body)?;
            let s = body.get(..n)?.to_vec();
            *body = &body[n..];
            Some(OsString::from_vec(s))
        }
        let words = (0..number(&mut body)?)
            .map(|_| string(&mut body))
            .collect::<Option<_>>()?;
        let env = (0..number(&mut body)?)
            .map(|_| Some((string(&mut body)?, string(&mut body)?)))
            .collect::<Option<_>>()?;
        body.is_empty().then_some(Message { words, env })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_reads_back_and_a_closed_pipe_ends_the_messages() {
        let message = Message {
            words: ["map", "wordcount", "7", "/tmp/a b.txt", "0", "4096"]
                .map(OsString::from)
                .to_vec(),
            env: vec![("mapreduce_map_input_start".into(), "0".into())],
        };
        let pipe = [message.frame(), Message::default().frame()].concat();
        let mut from = &pipe[..];
        assert_eq!(Message::read(&mut from).unwrap(), Some(message));
        assert_eq!(Message::read(&mut from).unwrap(), Some(Message::default()));
        assert_eq!(Message::read(&mut from).unwrap(), None);
        let cut = &pipe[..pipe.len() / 2];
        assert!(Message::read(&mut &cut[4..]).is_err());
    }

    #[test]
    fn a_run_reads_back_from_its_argument() {
        let run = Run {
            fd: 7,
            start: 10,
            end: 4096,
        };
        assert_eq!(Run::parse(run.arg().to_str().unwrap()), Some(run));
        for bad in ["7:10", "7:10:4096:1", "x:1:2", "7:9:8", "-1:0:0"] {
            assert_eq!(Run::parse(bad), None, "{bad}");
        }
    }
}
