//! The map side of a task: a mapper over one split, its output cut into
//! sort buffers, each sorted, optionally combined, and added to the
//! shuffle.

use std::io::{self, Read};
use std::process::Stdio;

use anyhow::{Context, Result};

use super::command::{self, Role, Task};
use super::records::{Sorted, LINE_COST};
use super::Job;

/// Runs the mapper over split `i` and adds its sorted output to the
/// shuffle.
pub(super) fn map_split(job: &Job<'_>, i: usize) -> Result<()> {
    let split = &job.splits[i];
    let name = job.input.part_name(split.part);
    let data = &job.input.part_bytes(split.part)[split.range.clone()];
    let task = Task {
        role: Role::Mapper,
        cmd: &job.mapper,
        what: format!(
            "split {i} ('{}', bytes {}..{})",
            name.display(),
            split.range.start,
            split.range.end
        ),
        env: vec![
            ("mapreduce_map_input_file", name.display().to_string()),
            ("mapreduce_map_input_start", split.range.start.to_string()),
            ("mapreduce_map_input_length", split.range.len().to_string()),
            ("mapreduce_task_partition", i.to_string()),
            ("mapreduce_task_ismap", "true".to_string()),
        ],
    };
    let mut seq = 0;
    // Every line ends with a newline, the file's last one too, as Hadoop
    // feeds lines to a mapper.
    let feed = |w: &mut dyn io::Write| match data.last() {
        Some(&b) if b != b'\n' => w.write_all(data).and_then(|()| w.write_all(b"\n")),
        _ => w.write_all(data),
    };
    command::run(&task, &job.ctl, Stdio::piped(), feed, |out| {
        let out = out.expect("stdout is piped");
        read_buffers(out, job.sort_buffer, |buf| {
            spill(job, &task, (i, seq), buf)?;
            seq += 1;
            Ok(())
        })
    })
}

/// Reads `r` to its end and hands `spill` its bytes in buffers of whole
/// lines, each cut when its bytes and its index (see [`LINE_COST`]) reach
/// `limit` (a longer line is one buffer); the last buffer may end without
/// a newline.
fn read_buffers(
    mut r: impl Read,
    limit: usize,
    mut spill: impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; limit.clamp(1, 1 << 16)];
    let mut lines = 0;
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("cannot read a mapper's output"),
        };
        buf.extend_from_slice(&chunk[..n]);
        lines += memchr::memchr_iter(b'\n', &chunk[..n]).count();
        if buf.len() + lines * LINE_COST >= limit {
            if let Some(last) = memchr::memrchr(b'\n', &buf) {
                spill(&buf[..=last])?;
                buf.drain(..=last);
                lines = 0;
            }
        }
    }
    if !buf.is_empty() {
        spill(&buf)?;
    }
    Ok(())
}

/// Sorts one buffer of the mapper's output, runs the combiner over it if
/// there is one, and adds the result to the shuffle as run `order`.
fn spill(job: &Job<'_>, mapper: &Task<'_>, order: (usize, usize), buf: &[u8]) -> Result<()> {
    let sorted = Sorted::new(buf, job.partitions)?;
    let cannot = || format!("cannot write map output to '{}'", job.spill_dir.display());
    let Some(cmd) = &job.combiner else {
        return job.shuffle.add(order, &sorted).with_context(cannot);
    };
    let task = Task {
        role: Role::Combiner,
        cmd,
        what: mapper.what.clone(),
        env: mapper.env.clone(),
    };
    let feed = |w: &mut dyn io::Write| sorted.write(None, w);
    let combined = command::run(&task, &job.ctl, Stdio::piped(), feed, |out| {
        let mut v = Vec::new();
        out.expect("stdout is piped")
            .read_to_end(&mut v)
            .context("cannot read a combiner's output")?;
        Ok(v)
    })?;
    // Partitioned and sorted again: a combiner may change a key, or write
    // its keys in another order.
    let sorted = Sorted::new(&combined, job.partitions)?;
    job.shuffle.add(order, &sorted).with_context(cannot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_whole_lines_within_the_limit() {
        let data: Vec<u8> = (0..1000)
            .flat_map(|i| format!("k{i}\t{i}\n").into_bytes())
            .collect();
        let mut bufs: Vec<Vec<u8>> = Vec::new();
        read_buffers(data.as_slice(), 4096, |b| {
            bufs.push(b.to_vec());
            Ok(())
        })
        .unwrap();
        assert!(bufs.len() > 1);
        assert!(bufs.iter().all(|b| b.ends_with(b"\n")));
        assert_eq!(bufs.concat(), data);
        let mut last = Vec::new();
        read_buffers(&b"a\nb"[..], 1 << 20, |b| {
            last.push(b.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(last, vec![b"a\nb".to_vec()]);
    }
}
