//! DAMON through sysfs (`/sys/kernel/mm/damon/admin`, Linux >= 5.18; the 6.12 layout).
//!
//! One kdamond per target process, each with one `vaddr` context, one target and one `stat`
//! scheme whose access pattern matches every region: DAMON's sysfs reports regions only as a
//! scheme's `tried_regions`, and those carry no target id, hence one kdamond each. Every interval
//! tierkitd writes `update_schemes_tried_regions` to each kdamond's `state` and reads
//! `schemes/0/tried_regions/N/{start,end,nr_accesses,age}`.
//!
//! **Pseudo-samples.** A region's `nr_accesses` counts the sampling intervals of the last
//! aggregation interval in which DAMON found the region accessed, out of
//! `max = aggr_us / sample_us`. Each present page of the region earns
//! `samples_per_page * nr_accesses / max` samples of credit per tierkitd interval (see
//! [`super::Credit`]): a page of a region accessed at every check gets `samples_per_page` samples
//! per interval, an idle region none. DAMON sees accessed bits, not loads and stores, so every
//! pseudo-sample is a load; it sees cache hits too, unlike PEBS's LLC-miss samples.
//!
//! tierkitd never touches kdamonds it did not create: it refuses DAMON when any kdamond exists
//! and is running (someone else is using DAMON), and at stop it turns its own off and sets
//! `nr_kdamonds` back to 0.

use std::path::{Path, PathBuf};

use tierkit_core::{Pid, SampleFilter};

use super::{Credit, Ctx, Named, Source, Stats};
use crate::error::{io, read_to_string, Error, Result};

pub const ADMIN: &str = "/sys/kernel/mm/damon/admin";

/// DAMON monitoring attributes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attrs {
    pub sample_us: u64,
    pub aggr_us: u64,
    pub update_us: u64,
    pub min_regions: u64,
    pub max_regions: u64,
    /// Pseudo-samples per page per interval for a region accessed at every check.
    pub samples_per_page: f64,
}

impl Default for Attrs {
    fn default() -> Self {
        Attrs {
            sample_us: 5_000,
            aggr_us: 100_000,
            update_us: 1_000_000,
            min_regions: 10,
            max_regions: 500,
            samples_per_page: 1.0,
        }
    }
}

/// One DAMON region as `tried_regions` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub end: u64,
    pub nr_accesses: u32,
    pub age: u32,
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(io(path))
}

fn read_u64(path: &Path) -> Result<u64> {
    let s = read_to_string(path)?;
    s.trim().parse().map_err(|_| Error::Parse {
        path: path.into(),
        what: "an unsigned integer",
        got: s.trim().into(),
    })
}

/// Read a scheme's `tried_regions` directory (numbered region directories plus `total_bytes`),
/// sorted by start address.
pub fn read_tried_regions(dir: &Path) -> Result<Vec<Region>> {
    let mut out = Vec::new();
    let rd = std::fs::read_dir(dir).map_err(io(dir))?;
    for e in rd {
        let e = e.map_err(io(dir))?;
        let numbered = e
            .file_name()
            .to_str()
            .is_some_and(|n| n.parse::<u32>().is_ok());
        if !numbered {
            continue;
        }
        let d = e.path();
        let r = Region {
            start: read_u64(&d.join("start"))?,
            end: read_u64(&d.join("end"))?,
            nr_accesses: read_u64(&d.join("nr_accesses"))? as u32,
            age: read_u64(&d.join("age"))? as u32,
        };
        if r.end < r.start {
            return Err(Error::Parse {
                path: d,
                what: "a region (end before start)",
                got: format!("{:#x}-{:#x}", r.start, r.end),
            });
        }
        out.push(r);
    }
    out.sort_by_key(|r| r.start);
    Ok(out)
}

/// Whether DAMON's sysfs interface is usable here, and if not why.
pub fn probe(root: &Path) -> std::result::Result<(), String> {
    let n = root.join("kdamonds/nr_kdamonds");
    if !n.exists() {
        return Err(format!(
            "{} does not exist (kernel without CONFIG_DAMON_SYSFS)",
            n.display()
        ));
    }
    let count = read_u64(&n).map_err(|e| e.to_string())?;
    for i in 0..count {
        let st = root.join(format!("kdamonds/{i}/state"));
        if read_to_string(&st)
            .map(|s| s.trim() == "on")
            .unwrap_or(false)
        {
            return Err(format!(
                "kdamond {i} is running ({}): DAMON is in use by someone else",
                st.display()
            ));
        }
    }
    let meta = std::fs::metadata(&n).map_err(|e| format!("{}: {e}", n.display()))?;
    if meta.permissions().readonly() || !is_root() {
        return Err(format!("{} needs root to write", n.display()));
    }
    Ok(())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Write the configuration of kdamond `i` monitoring `pid` (the directories already exist:
/// writing `nr_*` files makes the kernel create them).
pub fn configure_kdamond(root: &Path, i: usize, pid: Pid, a: &Attrs) -> Result<()> {
    let k = root.join(format!("kdamonds/{i}"));
    write(&k.join("contexts/nr_contexts"), "1")?;
    let c = k.join("contexts/0");
    write(&c.join("operations"), "vaddr")?;
    let m = c.join("monitoring_attrs");
    write(&m.join("intervals/sample_us"), &a.sample_us.to_string())?;
    write(&m.join("intervals/aggr_us"), &a.aggr_us.to_string())?;
    write(&m.join("intervals/update_us"), &a.update_us.to_string())?;
    write(&m.join("nr_regions/min"), &a.min_regions.to_string())?;
    write(&m.join("nr_regions/max"), &a.max_regions.to_string())?;
    write(&c.join("targets/nr_targets"), "1")?;
    write(&c.join("targets/0/pid_target"), &pid.to_string())?;
    write(&c.join("schemes/nr_schemes"), "1")?;
    let s = c.join("schemes/0");
    write(&s.join("action"), "stat")?;
    let ap = s.join("access_pattern");
    for (f, v) in [
        ("sz/min", "0".to_string()),
        ("sz/max", u64::MAX.to_string()),
        ("nr_accesses/min", "0".to_string()),
        ("nr_accesses/max", u32::MAX.to_string()),
        ("age/min", "0".to_string()),
        ("age/max", u32::MAX.to_string()),
    ] {
        write(&ap.join(f), &v)?;
    }
    Ok(())
}

pub struct Damon {
    root: PathBuf,
    attrs: Attrs,
    /// Target of each kdamond we run (kdamond i monitors pids[i]).
    pids: Vec<Pid>,
    running: Vec<bool>,
    filter: SampleFilter,
    credit: Credit,
    /// This interval's regions per target, read by `poll`.
    polled: Option<Vec<(Pid, Vec<Region>)>>,
}

impl Damon {
    pub fn new(root: &Path, attrs: Attrs) -> Damon {
        Damon {
            root: root.into(),
            attrs,
            pids: Vec::new(),
            running: Vec::new(),
            filter: SampleFilter::AllMisses,
            credit: Credit { cap: 64 },
            polled: None,
        }
    }

    fn state(&self, i: usize) -> PathBuf {
        self.root.join(format!("kdamonds/{i}/state"))
    }

    fn off_all(&mut self) {
        for i in 0..self.pids.len() {
            if read_to_string(self.state(i))
                .map(|s| s.trim() == "on")
                .unwrap_or(false)
            {
                let _ = write(&self.state(i), "off");
            }
        }
        self.running.iter_mut().for_each(|r| *r = false);
    }

    /// The regions of every running kdamond's target for this interval (a kdamond whose
    /// target exited is marked stopped and skipped).
    fn read_all(&mut self) -> Result<Vec<(Pid, Vec<Region>)>> {
        let mut all = Vec::new();
        for (i, &pid) in self.pids.clone().iter().enumerate() {
            if !self.running[i] {
                continue;
            }
            let state = self.state(i);
            if read_to_string(&state)
                .map(|s| s.trim() != "on")
                .unwrap_or(true)
            {
                // DAMON stops a kdamond whose targets have all exited
                self.running[i] = false;
                continue;
            }
            if let Err(e) = write(&state, "update_schemes_tried_regions") {
                // raced with the target's exit: the kdamond is gone
                self.running[i] = false;
                if read_to_string(&state)
                    .map(|s| s.trim() == "on")
                    .unwrap_or(false)
                {
                    return Err(e);
                }
                continue;
            }
            let dir = self
                .root
                .join(format!("kdamonds/{i}/contexts/0/schemes/0/tried_regions"));
            all.push((pid, read_tried_regions(&dir)?));
        }
        Ok(all)
    }

    pub fn max_accesses(&self) -> f64 {
        (self.attrs.aggr_us as f64 / self.attrs.sample_us.max(1) as f64).max(1.0)
    }
}

impl Source for Damon {
    fn name(&self) -> &'static str {
        "damon"
    }

    fn set_targets(&mut self, pids: &[Pid]) -> Result<Vec<String>> {
        self.off_all();
        let nr = self.root.join("kdamonds/nr_kdamonds");
        write(&nr, &pids.len().to_string())?;
        self.pids = pids.to_vec();
        self.running = vec![false; pids.len()];
        let mut notes = Vec::new();
        for (i, &pid) in pids.iter().enumerate() {
            configure_kdamond(&self.root, i, pid, &self.attrs)?;
            match write(&self.state(i), "on") {
                Ok(()) => self.running[i] = true,
                // the process may have exited between listing and starting
                Err(e) => notes.push(format!(
                    "damon: kdamond {i} for pid {pid} did not start: {e}"
                )),
            }
        }
        notes.push(format!(
            "damon: {} kdamond(s), sample {} us, aggregation {} us, regions {}-{}",
            pids.len(),
            self.attrs.sample_us,
            self.attrs.aggr_us,
            self.attrs.min_regions,
            self.attrs.max_regions
        ));
        Ok(notes)
    }

    /// Reads every kdamond's regions now and names those it saw accessed.
    fn poll(&mut self, out: &mut Vec<Named>) -> Result<()> {
        let all = self.read_all()?;
        for (pid, regions) in &all {
            out.extend(regions.iter().filter(|r| r.nr_accesses > 0).map(|r| Named {
                pid: *pid,
                start_vpn: r.start / crate::mech::PAGE_SIZE,
                end_vpn: r.end.div_ceil(crate::mech::PAGE_SIZE),
            }));
        }
        self.polled = Some(all);
        Ok(())
    }

    fn collect(&mut self, ctx: &mut Ctx) -> Result<Stats> {
        let mut st = Stats::default();
        let max = self.max_accesses();
        let all = match self.polled.take() {
            Some(all) => all,
            None => self.read_all()?,
        };
        for (pid, regions) in &all {
            let pid = *pid;
            let Some(pp) = ctx.procs.iter().find(|p| p.pid == pid) else {
                continue;
            };
            for r in regions {
                st.observed += 1;
                let idx = pp.range(
                    r.start / crate::mech::PAGE_SIZE,
                    r.end.div_ceil(crate::mech::PAGE_SIZE),
                );
                if idx.is_empty() {
                    st.unmatched += 1;
                    continue;
                }
                let amount = self.attrs.samples_per_page * r.nr_accesses as f64 / max;
                for j in idx {
                    st.samples += self.credit.give(
                        ctx.table,
                        pp.ids[j],
                        pid,
                        amount,
                        false,
                        ctx.now_ns,
                        self.filter,
                        ctx.samples,
                    );
                }
            }
        }
        Ok(st)
    }

    fn set_sampling(&mut self, period: u64, filter: SampleFilter) -> Option<String> {
        self.filter = filter;
        (period > 0).then(|| {
            format!(
                "damon: sampling period {period} has no DAMON equivalent; keeping sample {} us",
                self.attrs.sample_us
            )
        })
    }

    fn stop(&mut self) {
        self.off_all();
        let _ = write(&self.root.join("kdamonds/nr_kdamonds"), "0");
        self.pids.clear();
    }
}

impl Drop for Damon {
    fn drop(&mut self) {
        if !self.pids.is_empty() {
            self.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pages::PageTable;
    use crate::source::ProcPages;
    use tierkit_core::PageId;

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/damon")
    }

    #[test]
    fn tried_regions_parse_sorted() {
        let r = read_tried_regions(&fixture().join("tried_regions")).unwrap();
        assert_eq!(
            r,
            vec![
                Region {
                    start: 0x7f0000000000,
                    end: 0x7f0000100000,
                    nr_accesses: 20,
                    age: 7
                },
                Region {
                    start: 0x7f0000100000,
                    end: 0x7f0000400000,
                    nr_accesses: 0,
                    age: 31
                },
                Region {
                    start: 0x7f0000400000,
                    end: 0x7f0000500000,
                    nr_accesses: 5,
                    age: 2
                },
            ]
        );
        let e = read_tried_regions(&fixture().join("bad_regions"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("nr_accesses") && e.contains("lots"), "{e}");
    }

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tierkitd-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A fake admin tree: the directories the kernel would create after the nr_* writes.
    fn fake_admin(root: &Path, kdamonds: usize, regions: &[Region]) {
        for i in 0..kdamonds {
            let c = root.join(format!("kdamonds/{i}/contexts/0"));
            for d in [
                "monitoring_attrs/intervals",
                "monitoring_attrs/nr_regions",
                "targets/0",
            ] {
                std::fs::create_dir_all(c.join(d)).unwrap();
            }
            for d in ["sz", "nr_accesses", "age"] {
                std::fs::create_dir_all(c.join("schemes/0/access_pattern").join(d)).unwrap();
            }
            let tr = c.join("schemes/0/tried_regions");
            std::fs::create_dir_all(&tr).unwrap();
            std::fs::write(tr.join("total_bytes"), "0\n").unwrap();
            for (j, r) in regions.iter().enumerate() {
                let d = tr.join(j.to_string());
                std::fs::create_dir_all(&d).unwrap();
                for (f, v) in [
                    ("start", r.start),
                    ("end", r.end),
                    ("nr_accesses", r.nr_accesses as u64),
                    ("age", r.age as u64),
                ] {
                    std::fs::write(d.join(f), format!("{v}\n")).unwrap();
                }
            }
            std::fs::write(root.join(format!("kdamonds/{i}/state")), "off\n").unwrap();
        }
        std::fs::write(root.join("kdamonds/nr_kdamonds"), kdamonds.to_string()).unwrap();
    }

    #[test]
    fn configures_and_turns_regions_into_pseudo_samples() {
        let root = tmpdir("damon");
        let page = crate::mech::PAGE_SIZE;
        let regions = [
            Region {
                start: 0x10000 * page,
                end: 0x10004 * page,
                nr_accesses: 20,
                age: 1,
            },
            Region {
                start: 0x10004 * page,
                end: 0x10008 * page,
                nr_accesses: 0,
                age: 9,
            },
            Region {
                start: 0x20000 * page,
                end: 0x20001 * page,
                nr_accesses: 10,
                age: 1,
            },
        ];
        fake_admin(&root, 1, &regions);
        let mut d = Damon::new(&root, Attrs::default());
        d.set_targets(&[42]).unwrap();
        let c = root.join("kdamonds/0/contexts/0");
        let rd = |p: &str| std::fs::read_to_string(c.join(p)).unwrap();
        assert_eq!(rd("operations"), "vaddr");
        assert_eq!(rd("targets/0/pid_target"), "42");
        assert_eq!(rd("schemes/0/action"), "stat");
        assert_eq!(rd("monitoring_attrs/intervals/aggr_us"), "100000");
        assert_eq!(rd("schemes/0/access_pattern/sz/max"), u64::MAX.to_string());
        // the fake kernel keeps the state we wrote; make it "on" as a kernel would
        std::fs::write(root.join("kdamonds/0/state"), "on\n").unwrap();

        let mut t = PageTable::default();
        let mut pp = ProcPages {
            pid: 42,
            ..Default::default()
        };
        for v in 0x10000..0x10008u64 {
            let (id, _) = t.intern(42, v);
            t.slot_mut(id).unwrap().tier = 1;
            pp.vpns.push(v);
            pp.ids.push(id);
            pp.soft_dirty.push(false);
        }
        let procs = vec![pp];
        let mut samples = Vec::new();
        for _ in 0..2 {
            std::fs::write(root.join("kdamonds/0/state"), "on\n").unwrap();
            let mut ctx = Ctx {
                table: &mut t,
                procs: &procs,
                now_ns: 1,
                cpu_ghz: 1.0,
                samples: &mut samples,
            };
            let st = d.collect(&mut ctx).unwrap();
            assert_eq!((st.observed, st.unmatched), (3, 1));
        }
        // 4 hot pages x (20/20 accesses x 1 sample) x 2 intervals; the idle region gives none
        assert_eq!(samples.len(), 8);
        assert!(samples.iter().all(|s| s.page.0 < 4 && !s.is_store));
        assert!(t.slot(PageId(0)).unwrap().accessed);
        assert!(!t.slot(PageId(5)).unwrap().accessed);
        // a kdamond that stopped (its target exited) is skipped, not an error
        std::fs::write(root.join("kdamonds/0/state"), "off\n").unwrap();
        let mut ctx = Ctx {
            table: &mut t,
            procs: &procs,
            now_ns: 2,
            cpu_ghz: 1.0,
            samples: &mut samples,
        };
        assert_eq!(d.collect(&mut ctx).unwrap(), Stats::default());
        d.stop();
        assert_eq!(
            std::fs::read_to_string(root.join("kdamonds/nr_kdamonds")).unwrap(),
            "0"
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn probe_refuses_a_running_kdamond() {
        let root = tmpdir("damon-busy");
        fake_admin(&root, 1, &[]);
        std::fs::write(root.join("kdamonds/0/state"), "on\n").unwrap();
        let e = probe(&root).unwrap_err();
        assert!(e.contains("in use by someone else"), "{e}");
        let e = probe(&root.join("nope")).unwrap_err();
        assert!(e.contains("CONFIG_DAMON_SYSFS"), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
