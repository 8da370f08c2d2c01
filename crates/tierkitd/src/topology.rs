//! NUMA topology from sysfs: nodes with their CPUs, memory and distances
//! (`/sys/devices/system/node`), the kernel's memory tiers when present
//! (`/sys/devices/virtual/memory_tiering`), and the choice of the fast and slow nodes.

use std::path::{Path, PathBuf};

use crate::error::{read_to_string, Error, Result};

pub const NODE_ROOT: &str = "/sys/devices/system/node";
pub const TIERING_ROOT: &str = "/sys/devices/virtual/memory_tiering";

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub id: u32,
    pub cpus: Vec<u32>,
    pub mem_total_kb: u64,
    pub mem_free_kb: u64,
    /// Distances to every node, in node order (`distance` file).
    pub distance: Vec<u32>,
}

/// A kernel memory tier (`memory_tierN`, N = abstract distance >> chunk bits: lower is faster).
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryTier {
    pub id: u32,
    pub nodes: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    pub nodes: Vec<Node>,
    /// Sorted by id (fastest first); empty when the kernel has no memory tiering.
    pub tiers: Vec<MemoryTier>,
}

/// Which nodes make up tierkit's fast tier (0) and slow tier (1), and why.
#[derive(Clone, Debug, PartialEq)]
pub struct TierMap {
    pub fast: Vec<u32>,
    pub slow: Vec<u32>,
    pub reason: String,
}

impl TierMap {
    /// The tier of a node (None for a node in neither list).
    pub fn tier_of_node(&self, node: u32) -> Option<u8> {
        if self.fast.contains(&node) {
            Some(tierkit_core::FAST)
        } else if self.slow.contains(&node) {
            Some(tierkit_core::SLOW)
        } else {
            None
        }
    }
}

/// Parse a kernel node or CPU list (`0-3,8,10-11`; empty means none).
pub fn parse_list(s: &str) -> std::result::Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |x: &str| {
            x.trim()
                .parse::<u32>()
                .map_err(|_| format!("`{x}` is not a number (expected a list like 0-3,8)"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("range `{part}` runs backwards"));
                }
                if b - a > 4096 {
                    return Err(format!("range `{part}` is too long"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn parse_file_list(path: &Path) -> Result<Vec<u32>> {
    let s = read_to_string(path)?;
    parse_list(&s).map_err(|_| Error::Parse {
        path: path.into(),
        what: "a node/cpu list",
        got: s.trim().into(),
    })
}

/// `Node 0 MemTotal:       3062244 kB` -> (MemTotal, MemFree) in KiB.
fn parse_node_meminfo(path: &Path, text: &str) -> Result<(u64, u64)> {
    let mut total = None;
    let mut free = None;
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let (Some("Node"), Some(_), Some(key), Some(val)) =
            (w.next(), w.next(), w.next(), w.next())
        else {
            continue;
        };
        let v = || -> Result<u64> {
            val.parse().map_err(|_| Error::Parse {
                path: path.into(),
                what: "a meminfo value",
                got: line.into(),
            })
        };
        match key {
            "MemTotal:" => total = Some(v()?),
            "MemFree:" => free = Some(v()?),
            _ => {}
        }
    }
    match (total, free) {
        (Some(t), Some(f)) => Ok((t, f)),
        _ => Err(Error::Parse {
            path: path.into(),
            what: "MemTotal and MemFree",
            got: text.lines().take(2).collect::<Vec<_>>().join(" | "),
        }),
    }
}

fn numbered_dirs(root: &Path, prefix: &str) -> Result<Vec<(u32, PathBuf)>> {
    let mut out = Vec::new();
    let rd = std::fs::read_dir(root).map_err(crate::error::io(root))?;
    for e in rd {
        let e = e.map_err(crate::error::io(root))?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(n) = name
            .strip_prefix(prefix)
            .and_then(|n| n.parse::<u32>().ok())
        {
            out.push((n, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Read one node's memory counters again (MemTotal, MemFree in KiB).
pub fn node_meminfo(node_root: &Path, node: u32) -> Result<(u64, u64)> {
    let p = node_root.join(format!("node{node}/meminfo"));
    let text = read_to_string(&p)?;
    parse_node_meminfo(&p, &text)
}

impl Topology {
    /// Read the live system.
    pub fn read_system() -> Result<Topology> {
        Topology::read(Path::new(NODE_ROOT), Path::new(TIERING_ROOT))
    }

    /// Read a node tree and, if it exists, a memory-tiering tree (recorded trees in tests).
    pub fn read(node_root: &Path, tiering_root: &Path) -> Result<Topology> {
        let mut nodes = Vec::new();
        for (id, dir) in numbered_dirs(node_root, "node")? {
            let cpus = parse_file_list(&dir.join("cpulist"))?;
            let mi = dir.join("meminfo");
            let (mem_total_kb, mem_free_kb) = parse_node_meminfo(&mi, &read_to_string(&mi)?)?;
            let dp = dir.join("distance");
            let dtext = read_to_string(&dp)?;
            let distance = dtext
                .split_whitespace()
                .map(|d| d.parse::<u32>())
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|_| Error::Parse {
                    path: dp.clone(),
                    what: "node distances",
                    got: dtext.trim().into(),
                })?;
            nodes.push(Node {
                id,
                cpus,
                mem_total_kb,
                mem_free_kb,
                distance,
            });
        }
        if nodes.is_empty() {
            return Err(Error::Topology(format!(
                "no node directories under {}",
                node_root.display()
            )));
        }
        let mut tiers = Vec::new();
        if tiering_root.is_dir() {
            for (id, dir) in numbered_dirs(tiering_root, "memory_tier")? {
                tiers.push(MemoryTier {
                    id,
                    nodes: parse_file_list(&dir.join("nodelist"))?,
                });
            }
        }
        Ok(Topology { nodes, tiers })
    }

    pub fn node(&self, id: u32) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    fn memory_nodes(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter(|n| n.mem_total_kb > 0)
            .map(|n| n.id)
            .collect()
    }

    /// Choose the fast and slow nodes. Overrides win; otherwise the kernel's memory tiers
    /// (the fastest tier is fast, every slower one slow); otherwise nodes with CPUs are fast and
    /// memory-only nodes slow.
    pub fn choose(&self, fast: Option<&[u32]>, slow: Option<&[u32]>) -> Result<TierMap> {
        let mem = self.memory_nodes();
        let check = |flag: &str, list: &[u32]| -> Result<()> {
            if list.is_empty() {
                return Err(Error::Config {
                    field: flag.into(),
                    why: "the list is empty".into(),
                });
            }
            for n in list {
                if self.node(*n).is_none() {
                    return Err(Error::Config {
                        field: flag.into(),
                        why: format!("node {n} does not exist (nodes: {})", fmt_list(&self.ids())),
                    });
                }
                if !mem.contains(n) {
                    return Err(Error::Config {
                        field: flag.into(),
                        why: format!("node {n} has no memory"),
                    });
                }
            }
            Ok(())
        };
        let rest =
            |of: &[u32]| -> Vec<u32> { mem.iter().copied().filter(|n| !of.contains(n)).collect() };
        let (f, s, reason) = match (fast, slow) {
            (Some(f), Some(s)) => {
                check("--fast-nodes", f)?;
                check("--slow-nodes", s)?;
                (
                    f.to_vec(),
                    s.to_vec(),
                    "set by --fast-nodes and --slow-nodes".to_string(),
                )
            }
            (Some(f), None) => {
                check("--fast-nodes", f)?;
                (
                    f.to_vec(),
                    rest(f),
                    "fast set by --fast-nodes; slow = the other memory nodes".into(),
                )
            }
            (None, Some(s)) => {
                check("--slow-nodes", s)?;
                (
                    rest(s),
                    s.to_vec(),
                    "slow set by --slow-nodes; fast = the other memory nodes".into(),
                )
            }
            (None, None) => {
                let with_mem: Vec<&MemoryTier> = self
                    .tiers
                    .iter()
                    .filter(|t| t.nodes.iter().any(|n| mem.contains(n)))
                    .collect();
                if with_mem.len() >= 2 {
                    let f: Vec<u32> = with_mem[0]
                        .nodes
                        .iter()
                        .copied()
                        .filter(|n| mem.contains(n))
                        .collect();
                    let s = rest(&f);
                    let reason = format!(
                        "kernel memory tiers: memory_tier{} is fast, {} slow",
                        with_mem[0].id,
                        with_mem[1..]
                            .iter()
                            .map(|t| format!("memory_tier{}", t.id))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                    (f, s, reason)
                } else {
                    let f: Vec<u32> = self
                        .nodes
                        .iter()
                        .filter(|n| n.mem_total_kb > 0 && !n.cpus.is_empty())
                        .map(|n| n.id)
                        .collect();
                    let s = rest(&f);
                    (
                        f,
                        s,
                        "nodes with CPUs are fast, memory-only nodes slow".into(),
                    )
                }
            }
        };
        if let Some(n) = f.iter().find(|n| s.contains(n)) {
            return Err(Error::Config {
                field: "--fast-nodes/--slow-nodes".into(),
                why: format!("node {n} is in both lists"),
            });
        }
        if f.is_empty() {
            return Err(Error::Topology(format!(
                "no fast node ({reason}); pass --fast-nodes"
            )));
        }
        if s.is_empty() {
            return Err(Error::Topology(format!(
                "no slow node: memory nodes {} all look fast ({reason}); pass --slow-nodes",
                fmt_list(&mem)
            )));
        }
        Ok(TierMap {
            fast: f,
            slow: s,
            reason,
        })
    }

    fn ids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    /// One line per node and tier, for the start-up report.
    pub fn describe(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .nodes
            .iter()
            .map(|n| {
                format!(
                    "node{}: cpus=[{}] mem={} MiB free={} MiB distance=[{}]",
                    n.id,
                    fmt_list(&n.cpus),
                    n.mem_total_kb / 1024,
                    n.mem_free_kb / 1024,
                    n.distance
                        .iter()
                        .map(|d| d.to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            })
            .collect();
        for t in &self.tiers {
            v.push(format!(
                "memory_tier{}: nodes [{}]",
                t.id,
                fmt_list(&t.nodes)
            ));
        }
        v
    }
}

/// Format a list back in the kernel's compact form (`0-3,8`).
pub fn fmt_list(v: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", v[i], v[j])
        } else {
            v[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> (PathBuf, PathBuf) {
        let d = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sysfs")
            .join(name);
        (d.join("node"), d.join("memory_tiering"))
    }

    #[test]
    fn lists_parse_and_format() {
        assert_eq!(
            parse_list("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_list("").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_list("2,1,1").unwrap(), vec![1, 2]);
        assert!(parse_list("3-1").unwrap_err().contains("backwards"));
        assert!(parse_list("a").unwrap_err().contains("`a`"));
        assert_eq!(fmt_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
    }

    #[test]
    fn qemu_dax_guest_uses_kernel_tiers() {
        let (n, t) = fixture("qemu-dax");
        let topo = Topology::read(&n, &t).unwrap();
        assert_eq!(topo.nodes.len(), 2);
        assert_eq!(topo.nodes[0].cpus, vec![0]);
        assert!(topo.nodes[1].cpus.is_empty());
        assert_eq!(topo.nodes[1].mem_total_kb, 1048576);
        assert_eq!(topo.nodes[0].distance, vec![10, 20]);
        assert_eq!(
            topo.tiers.iter().map(|t| t.id).collect::<Vec<_>>(),
            vec![4, 22]
        );
        let m = topo.choose(None, None).unwrap();
        assert_eq!((m.fast.clone(), m.slow.clone()), (vec![0], vec![1]));
        assert!(m.reason.contains("memory_tier4 is fast"), "{}", m.reason);
        assert_eq!(m.tier_of_node(1), Some(1));
        assert_eq!(m.tier_of_node(7), None);
    }

    #[test]
    fn without_tiers_cpu_less_nodes_are_slow() {
        let (n, t) = fixture("cxl-no-tiers");
        let topo = Topology::read(&n, &t).unwrap();
        assert!(topo.tiers.is_empty());
        let m = topo.choose(None, None).unwrap();
        assert_eq!((m.fast, m.slow), (vec![0, 1], vec![2]));
    }

    #[test]
    fn two_sockets_need_an_override() {
        let (n, t) = fixture("two-socket");
        let topo = Topology::read(&n, &t).unwrap();
        let e = topo.choose(None, None).unwrap_err().to_string();
        assert!(
            e.contains("no slow node") && e.contains("--slow-nodes"),
            "{e}"
        );
        let m = topo.choose(None, Some(&[1])).unwrap();
        assert_eq!((m.fast, m.slow), (vec![0], vec![1]));
        let e = topo.choose(Some(&[0]), Some(&[0])).unwrap_err().to_string();
        assert!(e.contains("node 0 is in both"), "{e}");
        let e = topo.choose(Some(&[5]), None).unwrap_err().to_string();
        assert!(e.starts_with("--fast-nodes: node 5 does not exist"), "{e}");
    }

    #[test]
    fn broken_meminfo_names_the_file() {
        let (n, t) = fixture("broken");
        let e = Topology::read(&n, &t).unwrap_err().to_string();
        assert!(e.contains("node1/meminfo") && e.contains("MemTotal"), "{e}");
    }
}
