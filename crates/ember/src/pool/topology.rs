//! The machine's NUMA topology: its nodes, the CPUs of each that this
//! process may use, and the distances between nodes; and the node that
//! holds a page of memory. All the OS-specific NUMA code is here.
//!
//! Read from sysfs (`/sys/devices/system/node/node*/cpulist` and
//! `distance`), restricted to the CPUs the process may run on
//! (`sched_getaffinity`: `taskset`, cgroup cpusets); nodes left with no
//! allowed CPU are dropped. Anything missing or unreadable (no sysfs, a
//! kernel without NUMA, another OS) gives one node of all allowed CPUs,
//! where the runtime schedules as if topology did not exist.
//!
//! A page's node comes from `get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR)`,
//! one system call per split, asked only on machines of two or more nodes.
//! It faults the page in if it is not mapped yet (a page of a mapped file
//! in the page cache is mapped where it already is, a fresh page is placed
//! by the memory policy); `move_pages` with no target would answer
//! `-ENOENT` for a page not yet mapped into the process.

use std::fs;
use std::path::Path;

use crate::error::{Error, Result};

/// Distance sysfs reports for a node to itself, and the one assumed
/// between two nodes when none is given (the ACPI SLIT defaults).
const LOCAL: u32 = 10;
const REMOTE: u32 = 20;

/// The NUMA nodes the runtime's workers are placed on: each node's CPUs
/// and the distances between nodes.
///
/// [`Topology::detect`] reads the machine's (what a runtime uses unless
/// given one); [`Topology::new`] and [`Topology::simulated`] describe nodes
/// that need not exist, so that tests and benchmarks can run the
/// multi-node schedule on any machine. On a given topology the node of a
/// split is its place in the input (the input cut into one block per
/// node), not the kernel's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Per node, the CPUs the workers placed on it may run on.
    cpus: Vec<Vec<usize>>,
    /// `distance[a][b]`: the relative cost for node `a` of memory on `b`.
    distance: Vec<Vec<u32>>,
    /// The kernel's number of each node (detected topologies only: a
    /// given one cannot ask the kernel where a page is).
    kernel_ids: Option<Vec<usize>>,
}

impl Topology {
    /// The machine's topology, restricted to the CPUs this process may run
    /// on; one node of those CPUs where it cannot be read.
    pub fn detect() -> Topology {
        let allowed = allowed_cpus();
        detect_in(Path::new("/sys/devices/system/node"), &allowed)
            .unwrap_or_else(|| Topology::one_node(allowed))
    }

    /// Nodes with the given CPUs each (CPU numbers as the OS counts them;
    /// a CPU may belong to several nodes, to simulate more nodes than
    /// CPUs), at distance 20 from one another. Fails if there is no node
    /// or a node has no CPU.
    pub fn new(cpus: Vec<Vec<usize>>) -> Result<Topology> {
        if cpus.is_empty() || cpus.iter().any(Vec::is_empty) {
            return Err(Error::Config(
                "a topology needs at least one node, and every node a CPU".into(),
            ));
        }
        let n = cpus.len();
        let distance = (0..n)
            .map(|a| {
                (0..n)
                    .map(|b| if a == b { LOCAL } else { REMOTE })
                    .collect()
            })
            .collect();
        Ok(Topology {
            cpus,
            distance,
            kernel_ids: None,
        })
    }

    /// `nodes` simulated nodes over the CPUs this process may run on, dealt
    /// in turn (node `i` gets allowed CPUs `i`, `i + nodes`, ...; with fewer
    /// CPUs than nodes, nodes share them). Zero nodes count as one.
    pub fn simulated(nodes: usize) -> Topology {
        let mut allowed = allowed_cpus();
        if allowed.is_empty() {
            allowed.push(0);
        }
        let nodes = nodes.max(1);
        let cpus = (0..nodes)
            .map(|i| match allowed.len() > i {
                true => allowed.iter().copied().skip(i).step_by(nodes).collect(),
                false => vec![allowed[i % allowed.len()]],
            })
            .collect();
        Topology::new(cpus).unwrap_or_else(|_| Topology::one_node(allowed))
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.cpus.len()
    }

    /// The CPUs of `node` (empty for a node that does not exist).
    pub fn cpus(&self, node: usize) -> &[usize] {
        self.cpus.get(node).map_or(&[], Vec::as_slice)
    }

    /// The distance from `a` to memory on `b` (10 for a node to itself;
    /// `None` for a node that does not exist).
    pub fn distance(&self, a: usize, b: usize) -> Option<u32> {
        self.distance.get(a)?.get(b).copied()
    }

    /// True when this topology was read from the machine (so the kernel
    /// can say which of its nodes holds a page).
    pub fn is_detected(&self) -> bool {
        self.kernel_ids.is_some()
    }

    /// One node of `cpus` (of CPU 0 if the list is empty).
    fn one_node(mut cpus: Vec<usize>) -> Topology {
        if cpus.is_empty() {
            cpus.push(0);
        }
        Topology {
            cpus: vec![cpus],
            distance: vec![vec![LOCAL]],
            kernel_ids: None,
        }
    }

    /// The other nodes in the order `node`'s workers steal from them:
    /// nearest first; among equals, the next node numbers after `node`
    /// first, so that nodes do not all raid the same one.
    pub(crate) fn steal_order(&self, node: usize) -> Vec<usize> {
        let n = self.nodes();
        let mut others: Vec<usize> = (1..n).map(|k| (node + k) % n).collect();
        others.sort_by_key(|&b| self.distance[node][b]);
        others
    }

    /// `(node, cpu)` of every worker slot, node by node: a node's CPUs are
    /// filled before the next node's (as Phoenix binds its threads).
    pub(crate) fn slots(&self) -> Vec<(usize, usize)> {
        let per_node = self.cpus.iter().enumerate();
        per_node
            .flat_map(|(n, cpus)| cpus.iter().map(move |&c| (n, c)))
            .collect()
    }

    /// The kernel's number of each node, in node order (detected
    /// topologies only).
    pub(crate) fn kernel_ids(&self) -> Option<&[usize]> {
        self.kernel_ids.as_deref()
    }

    /// This topology as if detected, its nodes numbered `ids` by the
    /// kernel (for tests of what only a detected topology does).
    #[cfg(test)]
    pub(crate) fn with_kernel_ids(mut self, ids: Vec<usize>) -> Topology {
        assert_eq!(ids.len(), self.nodes());
        self.kernel_ids = Some(ids);
        self
    }

    /// The node (by index in this topology) that holds the page at `addr`,
    /// if the topology is detected and the kernel says.
    pub(crate) fn node_of(&self, addr: *const u8) -> Option<usize> {
        let ids = self.kernel_ids.as_ref()?;
        let id = page_node(addr)?;
        ids.iter().position(|&k| k == id)
    }
}

/// The topology under `root` (sysfs' node directory) restricted to
/// `allowed`, or `None` if it cannot be read or leaves no node.
fn detect_in(root: &Path, allowed: &[usize]) -> Option<Topology> {
    let mut ids: Vec<usize> = fs::read_dir(root)
        .ok()?
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_prefix("node")?
                .parse()
                .ok()
        })
        .collect();
    ids.sort_unstable();
    let mut kept = Vec::new();
    let mut cpus = Vec::new();
    let mut rows = Vec::new();
    for id in ids {
        let dir = root.join(format!("node{id}"));
        let list = parse_cpulist(fs::read_to_string(dir.join("cpulist")).ok()?.trim())?;
        let mine: Vec<usize> = list.into_iter().filter(|c| allowed.contains(c)).collect();
        let row: Vec<u32> = fs::read_to_string(dir.join("distance"))
            .ok()?
            .split_whitespace()
            .map(|d| d.parse().ok())
            .collect::<Option<_>>()?;
        if !mine.is_empty() {
            kept.push(id);
            cpus.push(mine);
            rows.push(row);
        }
    }
    // A row lists the distance to every node by kernel number; keep the
    // columns of the kept nodes (a missing column: the default).
    let distance = rows
        .iter()
        .map(|row| {
            kept.iter()
                .map(|&b| row.get(b).copied().unwrap_or(REMOTE))
                .collect()
        })
        .collect();
    (!kept.is_empty()).then_some(Topology {
        cpus,
        distance,
        kernel_ids: Some(kept),
    })
}

/// Parses a kernel CPU list (`0-3,8,10-11`).
fn parse_cpulist(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<usize>().ok()?..=b.parse().ok()?),
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// The CPUs this process may run on, in order (empty if unknown).
#[cfg(target_os = "linux")]
pub(crate) fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a plain bit set that sched_getaffinity fills in; its
    // size is passed along, and it is only read after the call succeeded.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

/// Binds the calling thread to `cpus` (a hint: if it fails, the thread
/// runs where the scheduler puts it).
#[cfg(target_os = "linux")]
pub(crate) fn bind_to(cpus: &[usize]) {
    // SAFETY: `set` is a zeroed bit set with the given bits set (CPU_SET
    // ignores numbers past the set's size), passed with its size;
    // sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn bind_to(_cpus: &[usize]) {}

/// The kernel's number of the NUMA node that holds the page at `addr`
/// (faulting it in if needed), or `None` if the kernel cannot say (an
/// address not mapped, a kernel without NUMA). Asked with
/// `get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR)`; `addr` is never read.
#[cfg(target_os = "linux")]
// The kernel looks `addr` up in the process's mappings; nothing reads
// through it, so any pointer is safe to pass.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn page_node(addr: *const u8) -> Option<usize> {
    const MPOL_F_NODE: libc::c_ulong = 1;
    const MPOL_F_ADDR: libc::c_ulong = 2;
    let mut node: libc::c_int = -1;
    // SAFETY: get_mempolicy writes one int to `node` (a valid local) and
    // with a null node mask and zero max node writes nothing else; `addr`
    // is only looked up in the process's mappings, never dereferenced by
    // us (an unmapped address is an EFAULT error, not a fault).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node as *mut libc::c_int,
            std::ptr::null_mut::<libc::c_ulong>(),
            0 as libc::c_ulong,
            addr,
            MPOL_F_NODE | MPOL_F_ADDR,
        )
    };
    (rc == 0 && node >= 0).then_some(node as usize)
}

/// Places the pages of `addr..addr + len` on the kernel's node `id` where
/// it has room (`mbind(MPOL_PREFERRED)`), moving the range's pages already
/// elsewhere; with `None`, gives the range back to the default policy
/// (later pages where the thread that touches them runs), moving nothing.
/// `addr` is rounded down to a page. A hint: if the kernel refuses, pages
/// go where the default puts them.
///
/// A range with a policy of its own is also left alone by the kernel's
/// automatic NUMA balancing, which would otherwise move a buffer's pages
/// toward the one thread that writes them all.
#[cfg(target_os = "linux")]
pub(crate) fn place_pages(addr: usize, len: usize, id: Option<usize>) {
    const MPOL_DEFAULT: libc::c_ulong = 0;
    const MPOL_PREFERRED: libc::c_ulong = 1;
    const MPOL_MF_MOVE: libc::c_uint = 1 << 1;
    const WORD: usize = libc::c_ulong::BITS as usize;
    // SAFETY: sysconf has no preconditions.
    let page = (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).max(1) as usize;
    let start = addr - addr % page;
    let (mode, mask, flags) = match id {
        Some(id) => {
            let mut mask = vec![0 as libc::c_ulong; id / WORD + 1];
            mask[id / WORD] |= 1 << (id % WORD);
            (MPOL_PREFERRED, mask, MPOL_MF_MOVE)
        }
        None => (MPOL_DEFAULT, Vec::new(), 0),
    };
    // The kernel reads `maxnode - 1` bits of the mask (one more, as
    // libnuma passes it); none with the default policy.
    let maxnode = match mask.len() {
        0 => 0,
        words => (words * WORD + 1) as libc::c_ulong,
    };
    // SAFETY: mbind only changes the policy of (and may move) whole pages
    // of this process's mappings in the range, which keep their contents
    // and addresses; an unmapped range is an error, not a fault. `mask`
    // holds `maxnode - 1` bits (or is not read when `maxnode` is 0).
    unsafe {
        libc::syscall(
            libc::SYS_mbind,
            start,
            len + (addr - start),
            mode,
            mask.as_ptr(),
            maxnode,
            flags,
        );
    }
}

/// A range's page placement: nothing to set off Linux.
#[cfg(not(target_os = "linux"))]
pub(crate) fn place_pages(_addr: usize, _len: usize, _id: Option<usize>) {}

/// The kernel's node of the page at `addr`: never known off Linux.
#[cfg(not(target_os = "linux"))]
pub fn page_node(_addr: *const u8) -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists_parse_as_the_kernel_writes_them() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpulist(""), Some(vec![]));
        assert_eq!(parse_cpulist("x"), None);
    }

    /// A fake sysfs node directory: `nodes[i] = (cpulist, distance row)`.
    fn fake_sysfs(nodes: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (i, (cpus, dist)) in nodes.iter().enumerate() {
            let node = dir.path().join(format!("node{i}"));
            fs::create_dir(&node).unwrap();
            fs::write(node.join("cpulist"), format!("{cpus}\n")).unwrap();
            fs::write(node.join("distance"), format!("{dist}\n")).unwrap();
        }
        fs::create_dir(dir.path().join("power")).unwrap();
        dir
    }

    #[test]
    fn sysfs_is_read_and_restricted_to_the_allowed_cpus() {
        let dir = fake_sysfs(&[
            ("0-1", "10 21 31"),
            ("2-3", "21 10 21"),
            ("4-5", "31 21 10"),
        ]);
        let t = detect_in(dir.path(), &[0, 1, 4]).unwrap();
        assert_eq!(t.nodes(), 2);
        assert_eq!((t.cpus(0), t.cpus(1)), (&[0, 1][..], &[4][..]));
        assert_eq!(t.distance(0, 1), Some(31));
        assert_eq!(t.distance(1, 1), Some(10));
        assert_eq!(t.kernel_ids, Some(vec![0, 2]));
        assert_eq!(t.slots(), vec![(0, 0), (0, 1), (1, 4)]);
        assert!(detect_in(dir.path(), &[9]).is_none());
        assert!(detect_in(&dir.path().join("missing"), &[0]).is_none());
    }

    #[test]
    fn steals_go_nearest_first() {
        let dir = fake_sysfs(&[
            ("0", "10 20 30 20"),
            ("1", "20 10 20 30"),
            ("2", "30 20 10 20"),
            ("3", "20 30 20 10"),
        ]);
        let t = detect_in(dir.path(), &[0, 1, 2, 3]).unwrap();
        assert_eq!(t.steal_order(0), vec![1, 3, 2]);
        assert_eq!(t.steal_order(2), vec![3, 1, 0]);
        let flat = Topology::new(vec![vec![0]; 3]).unwrap();
        assert_eq!(flat.steal_order(1), vec![2, 0]);
    }

    #[test]
    fn simulated_nodes_share_the_cpus_when_too_few() {
        let allowed = allowed_cpus();
        let t = Topology::simulated(allowed.len() + 2);
        assert_eq!(t.nodes(), allowed.len() + 2);
        assert!((0..t.nodes()).all(|n| !t.cpus(n).is_empty()));
        let mut all: Vec<usize> = (0..t.nodes()).flat_map(|n| t.cpus(n).to_vec()).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all, allowed);
        assert!(!t.is_detected());
        assert!(Topology::new(vec![]).is_err());
        assert!(Topology::new(vec![vec![0], vec![]]).is_err());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_kernel_places_pages_on_a_detected_node() {
        let t = Topology::detect();
        let page = vec![1u8; 4096];
        if t.is_detected() {
            assert!(t.node_of(page.as_ptr()).is_some());
        }
        assert!(page_node(page.as_ptr()).is_some());
    }
}
