//! Loaded-latency curves L(B): a tier's average access latency as a function of the bandwidth
//! demanded from it and the read share of that traffic (design.md section 2 and 5).

/// One operating point of a queueing curve: L(B) = L0 + k * rho / (1 - rho), rho = B / Bsat.
/// Queueing happens at banks, channels and the TOR, so k is fitted, not derived.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueueFit {
    /// Saturation bandwidth, GB/s (= bytes/ns).
    pub bsat_gbps: f64,
    /// Queueing coefficient, ns.
    pub k_ns: f64,
}

/// A measured table of (bandwidth GB/s, latency ns) points, ascending in bandwidth.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub points: Vec<(f64, f64)>,
}

/// A loaded-latency curve with a read/write mix: parameters at 100% reads and at a mixed
/// read share (`mixed_read_frac`), linearly interpolated in the read share between them.
#[derive(Clone, Debug, PartialEq)]
pub enum Curve {
    Queueing {
        l0_ns: f64,
        read_only: QueueFit,
        mixed: QueueFit,
        mixed_read_frac: f64,
    },
    Measured {
        read_only: Table,
        mixed: Table,
        mixed_read_frac: f64,
    },
}

/// Highest utilisation the analytic form is evaluated at; beyond it latency grows linearly
/// (a wall). The closed-loop fixed point crosses it only a little, and only under demand far
/// beyond the tier's bandwidth: sixteen threads copying pages at once ask spr-cxl's CXL tier
/// for 80 GB/s and settle at 1.03x its saturation bandwidth
/// (`copies_at_once_share_the_source_tiers_bandwidth`).
const RHO_MAX: f64 = 0.995;

fn mix_weight(read_frac: f64, mixed_read_frac: f64) -> f64 {
    // 0 at 100% reads, 1 at the mixed point (and beyond, clamped).
    if mixed_read_frac >= 1.0 {
        return 0.0;
    }
    ((1.0 - read_frac) / (1.0 - mixed_read_frac)).clamp(0.0, 1.0)
}

impl Table {
    fn at(&self, b: f64) -> f64 {
        let p = &self.points;
        if b <= p[0].0 {
            return p[0].1;
        }
        for w in p.windows(2) {
            let ((b0, l0), (b1, l1)) = (w[0], w[1]);
            if b <= b1 {
                return l0 + (l1 - l0) * (b - b0) / (b1 - b0);
            }
        }
        // Past the last point: continue with ten times the last slope (a wall).
        let n = p.len();
        let ((b0, l0), (b1, l1)) = (p[n - 2], p[n - 1]);
        let slope = ((l1 - l0) / (b1 - b0)).max(l1 / b1);
        l1 + 10.0 * slope * (b - b1)
    }

    /// Check the table: at least two points, ascending bandwidth, positive latency.
    pub fn validate(&self) -> Result<(), String> {
        if self.points.len() < 2 {
            return Err("a measured curve needs at least two (bandwidth, latency) points".into());
        }
        for w in self.points.windows(2) {
            if w[1].0 <= w[0].0 {
                return Err(format!(
                    "bandwidths must ascend; {} follows {}",
                    w[1].0, w[0].0
                ));
            }
        }
        if self
            .points
            .iter()
            .any(|&(b, l)| b < 0.0 || l <= 0.0 || !b.is_finite() || !l.is_finite())
        {
            return Err("bandwidths must be >= 0 and latencies > 0".into());
        }
        // A loaded-latency curve: more bandwidth never lowers the latency.
        for w in self.points.windows(2) {
            if w[1].1 < w[0].1 {
                return Err(format!(
                    "latencies must not fall as bandwidth rises; {} ns at {} GB/s follows {} ns at {} GB/s",
                    w[1].1, w[1].0, w[0].1, w[0].0
                ));
            }
        }
        Ok(())
    }
}

impl Curve {
    /// Unloaded latency (one request in flight), ns.
    pub fn unloaded_ns(&self) -> f64 {
        match self {
            Curve::Queueing { l0_ns, .. } => *l0_ns,
            Curve::Measured { read_only, .. } => read_only.points[0].1,
        }
    }

    /// Loaded latency in ns at demanded bandwidth `gbps` with the given read share of bytes.
    pub fn latency_ns(&self, gbps: f64, read_frac: f64) -> f64 {
        let gbps = gbps.max(0.0);
        match self {
            Curve::Queueing {
                l0_ns,
                read_only,
                mixed,
                mixed_read_frac,
            } => {
                let w = mix_weight(read_frac, *mixed_read_frac);
                let bsat = read_only.bsat_gbps + w * (mixed.bsat_gbps - read_only.bsat_gbps);
                let k = read_only.k_ns + w * (mixed.k_ns - read_only.k_ns);
                let rho = gbps / bsat;
                if rho <= RHO_MAX {
                    l0_ns + k * rho / (1.0 - rho)
                } else {
                    let at_max = l0_ns + k * RHO_MAX / (1.0 - RHO_MAX);
                    let slope = k / ((1.0 - RHO_MAX) * (1.0 - RHO_MAX)); // d/drho at RHO_MAX
                    at_max + slope * (rho - RHO_MAX)
                }
            }
            Curve::Measured {
                read_only,
                mixed,
                mixed_read_frac,
            } => {
                let w = mix_weight(read_frac, *mixed_read_frac);
                let a = read_only.at(gbps);
                let b = mixed.at(gbps);
                a + w * (b - a)
            }
        }
    }

    /// The bandwidth at which the curve saturates for this read share, GB/s.
    pub fn saturation_gbps(&self, read_frac: f64) -> f64 {
        match self {
            Curve::Queueing {
                read_only,
                mixed,
                mixed_read_frac,
                ..
            } => {
                let w = mix_weight(read_frac, *mixed_read_frac);
                read_only.bsat_gbps + w * (mixed.bsat_gbps - read_only.bsat_gbps)
            }
            Curve::Measured {
                read_only,
                mixed,
                mixed_read_frac,
            } => {
                let w = mix_weight(read_frac, *mixed_read_frac);
                let a = read_only.points.last().map_or(0.0, |p| p.0);
                let b = mixed.points.last().map_or(0.0, |p| p.0);
                a + w * (b - a)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ddr() -> Curve {
        Curve::Queueing {
            l0_ns: 70.0,
            read_only: QueueFit {
                bsat_gbps: 185.0,
                k_ns: 17.5,
            },
            mixed: QueueFit {
                bsat_gbps: 154.0,
                k_ns: 35.0,
            },
            mixed_read_frac: 0.5,
        }
    }

    #[test]
    fn latency_rises_well_before_saturation() {
        let c = ddr();
        let l0 = c.latency_ns(0.0, 0.5);
        assert_eq!(l0, 70.0);
        // At 70% of the saturation bandwidth the loaded latency is already > 1.9x unloaded.
        let sat = c.saturation_gbps(0.5);
        assert!(c.latency_ns(0.7 * sat, 0.5) > 1.9 * l0);
        // Monotone in bandwidth, and writes make it worse.
        let mut prev = 0.0;
        for i in 0..200 {
            let l = c.latency_ns(i as f64, 0.5);
            assert!(l >= prev);
            prev = l;
        }
        assert!(c.latency_ns(100.0, 0.5) > c.latency_ns(100.0, 1.0));
    }

    #[test]
    fn measured_table_interpolates() {
        let t = Table {
            points: vec![(0.0, 100.0), (10.0, 120.0), (20.0, 300.0)],
        };
        t.validate().unwrap();
        let c = Curve::Measured {
            read_only: t.clone(),
            mixed: t,
            mixed_read_frac: 0.5,
        };
        assert_eq!(c.latency_ns(5.0, 1.0), 110.0);
        assert_eq!(c.latency_ns(15.0, 1.0), 210.0);
        assert!(c.latency_ns(25.0, 1.0) > 300.0);
        assert!(Table {
            points: vec![(1.0, 1.0), (0.5, 2.0)]
        }
        .validate()
        .is_err());
    }
}
