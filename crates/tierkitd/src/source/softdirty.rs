//! The portable fallback: soft-dirty bits (CONFIG_MEM_SOFT_DIRTY, on by default in Debian,
//! Ubuntu and Fedora kernels; no PMU, no DAMON, no idle-page tracking needed).
//!
//! Each interval the backend reads the targets' `/proc/PID/pagemap` anyway (to find present
//! pages); bit 55 of an entry says the page was written since the last clear. After the scan
//! tierkitd writes `4` to `/proc/PID/clear_refs`, which clears the bits (and write-protects the
//! PTEs, so the next write to each page takes a minor fault: the fallback's cost to the target).
//!
//! A page found dirty gets `samples_per_page` store pseudo-samples of credit (see
//! [`super::Credit`]). What it cannot see: reads. A page only read is never sampled, so hotness
//! policies over this source track write-hot pages only. tierkitd says so at start.

use tierkit_core::{Pid, SampleFilter};

use super::{Credit, Ctx, Source, Stats};
use crate::error::Result;

pub struct SoftDirty {
    pub samples_per_page: f64,
    filter: SampleFilter,
    credit: Credit,
}

impl SoftDirty {
    pub fn new(samples_per_page: f64) -> SoftDirty {
        SoftDirty {
            samples_per_page,
            filter: SampleFilter::AllMisses,
            credit: Credit { cap: 64 },
        }
    }
}

/// Whether soft-dirty tracking works: clear our own bits, dirty a page, read it back.
pub fn probe() -> std::result::Result<(), String> {
    std::fs::write("/proc/self/clear_refs", "4")
        .map_err(|e| format!("/proc/self/clear_refs: {e}"))?;
    let mut v = vec![0u8; 3 * crate::mech::PAGE_SIZE as usize];
    let addr = (v.as_ptr() as u64).div_ceil(crate::mech::PAGE_SIZE) * crate::mech::PAGE_SIZE;
    let off = (addr - v.as_ptr() as u64) as usize;
    v[off] = 1;
    std::hint::black_box(&mut v);
    let e = crate::scan::pagemap_entries(0, addr / crate::mech::PAGE_SIZE, 1)
        .map_err(|e| format!("/proc/self/pagemap: {e}"))?;
    if e.first()
        .is_some_and(|e| e & crate::scan::PM_SOFT_DIRTY != 0)
    {
        Ok(())
    } else {
        Err(
            "pagemap shows no soft-dirty bit after a write (kernel without CONFIG_MEM_SOFT_DIRTY)"
                .into(),
        )
    }
}

impl Source for SoftDirty {
    fn name(&self) -> &'static str {
        "softdirty"
    }

    fn set_targets(&mut self, _pids: &[Pid]) -> Result<Vec<String>> {
        Ok(Vec::new())
    }

    fn collect(&mut self, ctx: &mut Ctx) -> Result<Stats> {
        let mut st = Stats::default();
        for pp in ctx.procs {
            for (j, &dirty) in pp.soft_dirty.iter().enumerate() {
                if dirty {
                    st.observed += 1;
                    st.samples += self.credit.give(
                        ctx.table,
                        pp.ids[j],
                        pp.pid,
                        self.samples_per_page,
                        true,
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
        (period > 0).then(|| format!("softdirty: sampling period {period} has no soft-dirty equivalent; one look per interval"))
    }

    fn wants_soft_dirty(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pages::PageTable;
    use crate::source::ProcPages;

    #[test]
    fn dirty_pages_become_store_samples() {
        let mut t = PageTable::default();
        let mut pp = ProcPages {
            pid: 7,
            ..Default::default()
        };
        for v in 0..4u64 {
            let (id, _) = t.intern(7, v);
            t.slot_mut(id).unwrap().tier = 1;
            pp.vpns.push(v);
            pp.ids.push(id);
            pp.soft_dirty.push(v % 2 == 1);
        }
        let procs = vec![pp];
        let mut samples = Vec::new();
        let mut s = SoftDirty::new(2.0);
        let mut ctx = Ctx {
            table: &mut t,
            procs: &procs,
            now_ns: 9,
            cpu_ghz: 1.0,
            samples: &mut samples,
        };
        let st = s.collect(&mut ctx).unwrap();
        assert_eq!((st.observed, st.samples), (2, 4));
        assert!(samples
            .iter()
            .all(|x| x.is_store && x.page.0 % 2 == 1 && x.time_ns == 9));
    }

    #[test]
    fn probe_agrees_with_the_kernel_config() {
        // When this kernel's config is readable, the probe must agree with CONFIG_MEM_SOFT_DIRTY.
        let rel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let cfg = std::fs::read_to_string(format!("/boot/config-{}", rel.trim()))
            .ok()
            .or_else(|| {
                let out = std::process::Command::new("zcat")
                    .arg("/proc/config.gz")
                    .output()
                    .ok()?;
                out.status
                    .success()
                    .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
            });
        let Some(cfg) = cfg else {
            eprintln!(
                "no kernel config readable (/boot/config-*, /proc/config.gz); probe said {:?}",
                probe()
            );
            return;
        };
        let enabled = cfg.lines().any(|l| l == "CONFIG_MEM_SOFT_DIRTY=y");
        assert_eq!(probe().is_ok(), enabled, "{:?}", probe());
    }
}
