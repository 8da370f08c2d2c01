//! Property tests: whatever a policy asks, no page is lost or duplicated and no tier is ever
//! over capacity; residency counts match the page table.

use proptest::prelude::*;
use tierkit_core::action::{Action, MigrateMode, ScanTiers};
use tierkit_core::PageId;
use tierkit_sim::load_str;
use tierkit_sim::machine::Machine;

fn experiment(
    fast_mb: u32,
    procs: usize,
    objs_mb: &[u32],
    free_at: Option<f64>,
) -> tierkit_sim::Experiment {
    let mut t = format!("workload = \"custom\"\nplatform = \"spr-cxl\"\nduration_s = 1\nepoch_ms = 1\nfast_tier_gb = {}\n", fast_mb as f64 / 1024.0);
    for p in 0..procs {
        t += &format!(
            "[[process]]\nname = \"p{p}\"\nstart_s = {}\n",
            p as f64 * 0.002
        );
        for (i, mb) in objs_mb.iter().enumerate() {
            t += &format!("[[process.object]]\nname = \"o{i}\"\nsize_mb = {mb}\n");
            if let (Some(f), 1) = (free_at, i) {
                t += &format!("free_s = {f}\n");
            }
        }
        t += "[[process.thread]]\ncount = 2\nwork_ops = 3e5\n[[process.thread.phase]]\nmlp = 4\nread_frac = 0.6\n";
        t += "[[process.thread.phase.access]]\nobject = \"o0\"\nweight = 0.8\npattern = \"zipf\"\n";
        t += "[[process.thread.phase.access]]\nobject = \"*\"\nweight = 0.2\n";
    }
    load_str("prop.toml", &t, &[], None).unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    Migrate {
        page: u64,
        to: u8,
        mode: u8,
        shadow: bool,
    },
    Scan,
    Disable(u32),
    Partition(u32, Option<u64>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..400, 0u8..3, 0u8..3, any::<bool>()).prop_map(|(page, to, mode, shadow)| Op::Migrate { page, to, mode, shadow }),
        1 => Just(Op::Scan),
        1 => (0u32..3).prop_map(Op::Disable),
        1 => (0u32..3, proptest::option::of(0u64..50)).prop_map(|(p, n)| Op::Partition(p, n)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn pages_are_never_lost_duplicated_or_over_capacity(
        fast_mb in 0u32..2, procs in 1usize..3, free_at in proptest::option::of(0.002f64..0.02),
        ops in proptest::collection::vec(proptest::collection::vec(op(), 0..20), 1..30),
    ) {
        let exp = experiment(fast_mb, procs, &[1, 1], free_at);
        let mut m = Machine::new(&exp, false).unwrap();
        for batch in ops {
            m.step().unwrap();
            m.check_invariants().map_err(TestCaseError::fail)?;
            let mut actions: Vec<Action> = batch.into_iter().map(|o| match o {
                Op::Migrate { page, to, mode, shadow } => Action::Migrate {
                    page: PageId(page),
                    to,
                    mode: match mode { 0 => MigrateMode::Async, 1 => MigrateMode::Transactional, _ => MigrateMode::Sync { pid: 0, tid: 0 } },
                    keep_shadow: shadow,
                },
                Op::Scan => Action::SetHintScan { pid: None, period_ms: 2.0, pages: 64, tiers: ScanTiers::All },
                Op::Disable(p) => Action::SetMigration { pid: p, enabled: false },
                Op::Partition(p, n) => Action::SetPartition { pid: p, fast_pages: n },
            }).collect();
            m.apply(&mut actions);
            m.clear_events();
            m.check_invariants().map_err(TestCaseError::fail)?;
        }
    }
}

#[test]
fn first_touch_fills_the_fast_tier_then_spills() {
    let exp = experiment(1, 1, &[1, 2], None);
    let mut m = Machine::new(&exp, false).unwrap();
    m.step().unwrap();
    assert_eq!(m.used[0], m.cap[0], "fast tier full");
    assert_eq!(m.used[0] + m.used[1], 768, "3 MiB of 4 KiB pages");
    // the first object's pages are the ones in the fast tier
    assert_eq!(m.page_tier(0), 0);
    assert_eq!(m.page_tier(767), 1);
    m.check_invariants().unwrap();
}

#[test]
fn huge_pages_are_the_unit_with_2mib_pages() {
    let mut exp = experiment(8, 1, &[16, 16], None);
    exp.page_bytes = 2 << 20;
    let m = {
        let mut m = Machine::new(&exp, false).unwrap();
        m.step().unwrap();
        m
    };
    assert_eq!(m.total_pages(), 16);
    assert_eq!(m.used[0], 4);
}

#[test]
fn mechanisms_fire_promotion_shadow_remap_faults_partition() {
    use tierkit_core::telemetry::MigrationOutcome;
    // o0 (2 MiB, 512 pages) is accessed; o1 (1 MiB, pages 512..768) is never touched.
    let text = "workload = \"custom\"\nplatform = \"spr-cxl\"\nduration_s = 1\nfast_tier_gb = 0.0009765625\n\
        [[process]]\nname = \"p\"\n[[process.object]]\nname = \"o0\"\nsize_mb = 2\n[[process.object]]\nname = \"o1\"\nsize_mb = 1\n\
        [[process.thread]]\ncount = 2\n[[process.thread.phase]]\nmlp = 4\nread_frac = 0.6\n\
        [[process.thread.phase.access]]\nobject = \"o0\"\n";
    let exp = load_str("t.toml", text, &[], None).unwrap();
    let mut m = Machine::new(&exp, false).unwrap();
    m.step().unwrap();
    assert_eq!((m.used[0], m.used[1]), (256, 512));
    // page 700 is in the slow tier (first touch spilled); free a fast page first, then promote
    // with a shadow, then demote it back: the demotion of a clean page is a remap.
    let mut acts = vec![
        Action::Migrate {
            page: PageId(0),
            to: 1,
            mode: MigrateMode::Async,
            keep_shadow: false,
        },
        Action::Migrate {
            page: PageId(700),
            to: 0,
            mode: MigrateMode::Async,
            keep_shadow: true,
        },
        Action::SetHintScan {
            pid: None,
            period_ms: 1.0,
            pages: 768,
            tiers: ScanTiers::SlowOnly,
        },
    ];
    m.apply(&mut acts);
    m.step().unwrap();
    let outcomes: Vec<_> = m
        .tel
        .migrations
        .iter()
        .map(|r| (r.page.0, r.outcome, r.remap))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            (0, MigrationOutcome::Done, false),
            (700, MigrationOutcome::Done, false)
        ]
    );
    assert_eq!(m.page_tier(700), 0);
    m.check_invariants().unwrap();
    // Page 700 is never written, so its shadow stays clean: the demotion is a remap.
    let mut acts = vec![Action::Migrate {
        page: PageId(700),
        to: 1,
        mode: MigrateMode::Async,
        keep_shadow: false,
    }];
    m.apply(&mut acts);
    m.step().unwrap();
    let r = m.tel.migrations[0];
    assert_eq!(r.outcome, MigrationOutcome::Done);
    assert!(r.remap, "a clean demotion onto its shadow is a remap");
    m.check_invariants().unwrap();
    let mut faults = 0;
    for _ in 0..50 {
        m.step().unwrap();
        faults += m.tel.hint_faults.len();
        assert!(
            m.tel.hint_faults.iter().all(|f| f.tier == 1),
            "SlowOnly marks slow-tier pages only"
        );
    }
    assert!(
        faults > 10,
        "marked slow-tier pages fault when accessed ({faults})"
    );
    // A partition of 0 fast pages refuses promotions of that process.
    let mut acts = vec![
        Action::SetPartition {
            pid: 0,
            fast_pages: Some(0),
        },
        Action::Migrate {
            page: PageId(1),
            to: 1,
            mode: MigrateMode::Sync { pid: 0, tid: 0 },
            keep_shadow: false,
        },
        Action::Migrate {
            page: PageId(701),
            to: 0,
            mode: MigrateMode::Sync { pid: 0, tid: 0 },
            keep_shadow: false,
        },
    ];
    let before = m.threads[0].stall_ns;
    m.apply(&mut acts);
    assert!(
        m.threads[0].stall_ns > before,
        "a synchronous migration stalls the faulting thread"
    );
    m.step().unwrap();
    let outs: Vec<_> = m.tel.migrations.iter().map(|r| r.outcome).collect();
    assert_eq!(
        outs,
        vec![MigrationOutcome::Done, MigrationOutcome::NoSpace]
    );
}

/// Queue the demotion of `pages` to tier 1 for the background migration threads.
fn demote_in_background(m: &mut Machine, pages: std::ops::Range<u64>) {
    let mut acts: Vec<Action> = pages
        .map(|p| Action::Migrate {
            page: PageId(p),
            to: 1,
            mode: MigrateMode::Async,
            keep_shadow: false,
        })
        .collect();
    m.apply(&mut acts);
}

/// The background migration threads work through the queue at the rate their CPU allows
/// whatever the epoch: a migration that runs past an epoch's budget is paid for by the next
/// epochs. Without that debt one migration would start every epoch, and with 2 MiB pages (about
/// 0.4 ms of copying each on spr-cxl) an epoch of 0.125 ms drained the queue 3x as fast as one
/// of 1 ms, so kswapd's demotions made room sooner and fewer promotions failed for want of it.
#[test]
fn the_migration_queue_drains_at_the_threads_rate_whatever_the_epoch() {
    use tierkit_core::telemetry::MigrationOutcome;
    let done_after = |epoch_ms: &str| -> (usize, f64) {
        let text = "workload = \"custom\"\nplatform = \"spr-cxl\"\nduration_s = 1\nfast_tier_gb = 1\npage_size = \"2MiB\"\n\
            [[process]]\nname = \"p\"\n[[process.object]]\nname = \"o0\"\nsize_mb = 256\n\
            [[process.thread]]\ncount = 1\n[[process.thread.phase]]\nmlp = 4\n\
            [[process.thread.phase.access]]\nobject = \"o0\"\n";
        let sets = [format!("epoch_ms={epoch_ms}")];
        let exp = load_str("t.toml", text, &sets, None).unwrap();
        let mut m = Machine::new(&exp, false).unwrap();
        m.step().unwrap();
        assert_eq!(m.used[0], 128, "the object starts in the fast tier");
        demote_in_background(&mut m, 0..128);
        let steps = (8.0 / epoch_ms.parse::<f64>().unwrap()).round() as usize;
        let mut done = 0;
        for _ in 0..steps {
            m.step().unwrap();
            done += m
                .tel
                .migrations
                .iter()
                .filter(|r| r.outcome == MigrationOutcome::Done)
                .count();
        }
        let c = &exp.platform.costs;
        let per = c.migrate_fixed_us * 1e3 + exp.page_bytes as f64 / c.copy_gbps;
        (done, per)
    };
    let (coarse, per) = done_after("1");
    let (fine, _) = done_after("0.125");
    // 8 ms of one thread's CPU at `per` ns a migration, the last one started before the
    // budget ran out (a shootdown costs a little more than the copy)
    let rate = (8e6 / per).ceil() as usize;
    assert!(
        per > 2.5e5,
        "2 MiB migrations take longer than an epoch of 0.125 ms ({per} ns)"
    );
    for (epoch, n) in [("1 ms", coarse), ("0.125 ms", fine)] {
        assert!(
            n <= rate + 1 && n + 2 >= rate,
            "{n} migrations in 8 ms at {epoch}, the threads' CPU allows {rate}"
        );
    }
}

/// A machine on spr-cxl with 2 MiB pages: `threads` threads of one process over one object of
/// 1.5 GiB, 1 GiB of it in the fast tier by first touch; then `per_thread` of the fast tier's
/// pages demoted (by the background threads) so that as many of the slow tier's pages can come
/// up. Returns the machine and the slow pages to promote.
fn copying_machine(epoch_ms: &str, threads: u32, per_thread: u64) -> (Machine, Vec<u64>) {
    let text = format!(
        "workload = \"custom\"\nplatform = \"spr-cxl\"\nduration_s = 1\nfast_tier_gb = 1\npage_size = \"2MiB\"\n\
        [[process]]\nname = \"p\"\n[[process.object]]\nname = \"o0\"\nsize_mb = 1536\n\
        [[process.thread]]\ncount = {threads}\n[[process.thread.phase]]\nmlp = 1\n\
        [[process.thread.phase.access]]\nobject = \"o0\"\n"
    );
    let exp = load_str("t.toml", &text, &[format!("epoch_ms={epoch_ms}")], None).unwrap();
    let mut m = Machine::new(&exp, false).unwrap();
    m.step().unwrap();
    assert_eq!(m.used[0], 512, "first touch fills the fast tier");
    let n = threads as u64 * per_thread;
    demote_in_background(&mut m, 0..n);
    while m.used[0] > 512 - n {
        m.step().unwrap();
    }
    (m, (512..512 + n).collect())
}

/// Every thread promotes its pages synchronously at once; the steps until they have all been
/// copied: (time taken, ns; the most bytes per ns read from the slow tier in one step; the
/// most of its saturation bandwidth, at that step's read share, the slow tier carried).
fn copy_all(m: &mut Machine, pages: &[u64], per_thread: u64) -> (f64, f64, f64) {
    let mut acts: Vec<Action> = pages
        .iter()
        .enumerate()
        .map(|(i, &p)| Action::Migrate {
            page: PageId(p),
            to: 0,
            mode: MigrateMode::Sync {
                pid: 0,
                tid: (i as u64 / per_thread) as u32,
            },
            keep_shadow: false,
        })
        .collect();
    m.apply(&mut acts);
    let t0 = m.now_ns;
    let (mut peak, mut load): (f64, f64) = (0.0, 0.0);
    while m.threads.iter().any(|t| !t.copies.is_empty()) {
        m.step().unwrap();
        let c = &m.tel.tier_counters[1];
        let all = c.bytes_read + c.bytes_written;
        let sat = m.exp.platform.tiers[1]
            .curve
            .saturation_gbps(c.bytes_read / all);
        peak = peak.max(c.bytes_read / m.epoch_ns);
        load = load.max(all / m.epoch_ns / sat);
    }
    (m.now_ns - t0, peak, load)
}

/// A synchronous migration's copy is made by the faulting thread before it runs on, at
/// `copy_gbps` on an idle machine, and its bytes load the tiers while it copies: the time
/// the copies take does not depend on the epoch, and no step carries more of them than the
/// thread copies in it. Before, a copy's stall was a fixed time and its bytes were charged
/// whole to the next epoch (4 pages of 2 MiB in a step of 0.0625 ms: 134 GB/s).
#[test]
fn a_synchronous_copy_takes_its_time_in_the_thread_whatever_the_epoch() {
    let per = 4;
    let mut took = Vec::new();
    for epoch in ["1", "0.0625"] {
        let (mut m, pages) = copying_machine(epoch, 1, per);
        let e = m.epoch_ns;
        let c = m.exp.platform.costs.clone();
        let (t, peak, _) = copy_all(&mut m, &pages, per);
        // 4 copies of 2 MiB at 5 GB/s, less the fixed costs' share of the thread's time
        let copy = per as f64 * 2_097_152.0 / c.copy_gbps;
        assert!(
            t >= copy && t <= copy + 4.0 * (c.migrate_fixed_us + 3.0) * 1e3 + e,
            "copies done after {t} ns at {epoch} ms, {copy} ns of copying"
        );
        assert!(
            peak <= c.copy_gbps + 1.0,
            "{peak} GB/s read from the slow tier in one step at {epoch} ms (the copy reads {} GB/s, the thread's misses about 0.3)",
            c.copy_gbps
        );
        took.push(t);
    }
    assert!(
        (took[0] - took[1]).abs() <= 1e6,
        "the copies take {} ns at 1 ms and {} ns at 0.0625 ms",
        took[0],
        took[1]
    );
}

/// Copies load the tiers like misses do: sixteen threads copying at once ask the CXL tier for
/// 80 GB/s, more than it delivers, so its loaded latency rises, each copy slows, and the tier
/// carries about its saturation bandwidth; the copies take the bytes over that bandwidth, not
/// the time one copy takes on an idle machine. Before, each copy was a fixed stall and the
/// 128 MiB were charged to one epoch (2 TB/s at 0.0625 ms).
#[test]
fn copies_at_once_share_the_source_tiers_bandwidth() {
    let per = 4;
    let (mut m, pages) = copying_machine("0.0625", 16, per);
    let c = m.exp.platform.costs.clone();
    let (t, peak, load) = copy_all(&mut m, &pages, per);
    let alone = per as f64 * 2_097_152.0 / c.copy_gbps;
    let bytes = pages.len() as f64 * 2_097_152.0;
    // the saturation bandwidth of a read-write mix is the mixed fit's, 26 GB/s at most
    let sat = m.exp.platform.tiers[1].curve.saturation_gbps(0.9);
    // (past 99.5% of saturation the curve is a steep linear wall: 80 GB/s of demand sits a
    // little beyond it)
    assert!(
        load < 1.05 && peak > 0.8 * sat,
        "the CXL tier carried {load} of its saturation bandwidth at most, {peak} GB/s of reads"
    );
    assert!(
        t >= bytes / sat && t > 2.0 * alone,
        "{} pages copied in {t} ns: at least {} at the tier's saturation, one thread alone {alone}",
        pages.len(),
        bytes / sat
    );
}

/// The background migration threads' copies load the tiers while they copy: at 0.0625 ms a
/// 2 MiB demotion (0.42 ms of copying) spreads its bytes over the seven steps it spans, so no
/// step writes more to the slow tier than one thread copies (5 GB/s). Before, each copy was
/// charged whole to one step (34 GB/s).
#[test]
fn a_background_copy_spreads_its_bytes_over_the_time_it_takes() {
    let (mut m, _) = copying_machine("0.0625", 1, 0);
    demote_in_background(&mut m, 0..8);
    let c = m.exp.platform.costs.clone();
    let (mut peak, mut written): (f64, f64) = (0.0, 0.0);
    for _ in 0..128 {
        m.step().unwrap();
        let w = m.tel.tier_counters[1].bytes_written;
        written += w;
        peak = peak.max(w / m.epoch_ns);
    }
    assert_eq!(m.used[0], 504, "the 8 pages moved down");
    assert!(
        (written - 8.0 * 2_097_152.0).abs() < 1.0,
        "{written} bytes written to the slow tier, 8 pages of 2 MiB"
    );
    assert!(
        peak <= c.migration_threads as f64 * c.copy_gbps * 1.001,
        "{peak} GB/s written to the slow tier in one step"
    );
}

/// Shadows are dropped when their own tier needs room, also after another tier ran out of room:
/// a full fast tier, which holds no shadows, must not make the slow tier's shadows unreclaimable.
#[test]
fn a_full_fast_tier_leaves_the_slow_tiers_shadows_reclaimable() {
    use tierkit_core::telemetry::MigrationOutcome;
    // 256 fast pages, 640 slow ones; o0's 768 pages fill the fast tier and 512 slow pages
    let text = "workload = \"custom\"\nplatform = \"spr-cxl\"\nduration_s = 1\nfast_tier_gb = 0.0009765625\nslow_tier_gb = 0.00244140625\n\
        [[process]]\nname = \"p\"\n[[process.object]]\nname = \"o0\"\nsize_mb = 3\n\
        [[process.thread]]\ncount = 1\n[[process.thread.phase]]\nmlp = 4\nread_frac = 1.0\n\
        [[process.thread.phase.access]]\nobject = \"o0\"\n";
    let exp = load_str("t.toml", text, &[], None).unwrap();
    let mut m = Machine::new(&exp, false).unwrap();
    m.step().unwrap();
    assert_eq!((m.used[0], m.used[1]), (256, 512));
    let (fast, slow): (Vec<u64>, Vec<u64>) =
        (0..768u64).partition(|&p| m.page_tier(p as usize) == 0);
    let migrate = |page: u64, to: u8, keep_shadow: bool| Action::Migrate {
        page: PageId(page),
        to,
        mode: MigrateMode::Async,
        keep_shadow,
    };
    // the outcomes of the migrations asked for, over the steps that carry them out
    let run = |m: &mut Machine, mut acts: Vec<Action>| -> Vec<MigrationOutcome> {
        m.apply(&mut acts);
        let mut out = Vec::new();
        for _ in 0..50 {
            m.step().unwrap();
            out.extend(m.tel.migrations.iter().map(|r| r.outcome));
        }
        out
    };
    // 100 fast pages down, then 100 slow pages up with their shadows: the slow tier holds 612
    // pages, 100 of them shadows
    let mut acts: Vec<Action> = fast[..100].iter().map(|&p| migrate(p, 1, false)).collect();
    acts.extend(slow[..100].iter().map(|&p| migrate(p, 0, true)));
    assert_eq!(run(&mut m, acts), vec![MigrationOutcome::Done; 200]);
    assert_eq!((m.used[0], m.used[1]), (256, 612));
    // a promotion into the full fast tier fails: no shadow there to drop
    assert_eq!(
        run(&mut m, vec![migrate(slow[200], 0, true)]),
        vec![MigrationOutcome::NoSpace]
    );
    // 60 demotions need 60 slow slots, 28 are free: 32 shadows are dropped to make room
    let acts: Vec<Action> = fast[100..160]
        .iter()
        .map(|&p| migrate(p, 1, false))
        .collect();
    assert_eq!(
        run(&mut m, acts),
        vec![MigrationOutcome::Done; 60],
        "the slow tier's shadows make room for the demotions"
    );
    assert_eq!((m.used[0], m.used[1]), (196, 640));
    m.check_invariants().unwrap();
}
