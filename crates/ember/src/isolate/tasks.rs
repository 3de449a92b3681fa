//! The two kinds of worker task: a split to map, a key range to reduce;
//! how each is started, named in the stats, and named in an error.

use std::ffi::OsString;

use super::protocol::{Run, FIRST_LINE_ENV};
use super::shared;
use super::splits::Split;
use super::supervise::{Assignment, Spec};
use super::Task;
use crate::error::{Death, Error};
use crate::stream::Role;

impl Assignment for Split {
    fn spec(&self) -> Spec {
        let numbers = [self.start, self.end].map(|n| OsString::from(n.to_string()));
        // A file named by a descriptor of this process (in-memory input)
        // opens in the worker by its name in this process's `/proc`.
        let path = match shared::descriptor(&self.path) {
            Some(fd) => format!("/proc/{}/fd/{fd}", std::process::id()).into(),
            None => self.path.clone().into_os_string(),
        };
        let mut words = vec![path];
        words.extend(numbers);
        let first_line = self
            .first_line
            .map(|n| (FIRST_LINE_ENV, n.to_string().into()));
        Spec {
            role: Role::Map,
            words,
            env: [
                (
                    "mapreduce_map_input_file",
                    self.path.clone().into_os_string(),
                ),
                ("mapreduce_map_input_start", self.start.to_string().into()),
                (
                    "mapreduce_map_input_length",
                    (self.end - self.start).to_string().into(),
                ),
            ]
            .into_iter()
            .chain(first_line)
            .collect(),
        }
    }

    fn task(index: usize) -> Task {
        Task::Map { split: index }
    }

    fn died(&self, death: Death, attempts: u32) -> Error {
        Error::WorkerDied {
            path: self.path.clone(),
            start: self.start,
            end: self.end,
            death,
            attempts,
        }
    }

    fn failed(&self, message: String) -> Error {
        Error::InvalidInput(format!(
            "mapping '{}' bytes {}..{}: {message}",
            self.path.display(),
            self.start,
            self.end,
        ))
    }
}

/// A key range of the run's keys, reduced by one worker: its index among
/// the ranges (in key order) and its pairs in each map channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Partition {
    pub(super) index: usize,
    pub(super) count: usize,
    pub(super) runs: Vec<Run>,
}

impl Assignment for Partition {
    /// The words are the number of runs, then each run.
    fn spec(&self) -> Spec {
        let mut words = vec![OsString::from(self.runs.len().to_string())];
        words.extend(self.runs.iter().map(Run::arg));
        Spec {
            role: Role::Reduce,
            words,
            env: vec![("mapreduce_task_partition", self.index.to_string().into())],
        }
    }

    fn task(index: usize) -> Task {
        Task::Reduce { partition: index }
    }

    fn died(&self, death: Death, attempts: u32) -> Error {
        Error::ReducerDied {
            partition: self.index,
            partitions: self.count,
            death,
            attempts,
        }
    }

    fn failed(&self, message: String) -> Error {
        Error::InvalidInput(format!(
            "reducing key range {} of {}: {message}",
            self.index + 1,
            self.count
        ))
    }
}
