//! The kernel's page-placement mechanism, one thin wrapper per system call: a target's VMAs from
//! `/proc/PID/maps`, page-to-node queries and migration by batched `move_pages(2)`, and allocation
//! binding with `mbind(2)` and `set_mempolicy(2)`. Only these wrappers use `unsafe`.

use std::io;

#[cfg(not(target_pointer_width = "64"))]
compile_error!(
    "tierkitd passes u64 addresses as pointer arrays to move_pages; it needs a 64-bit target"
);

pub const PAGE_SIZE: u64 = 4096;
pub const MPOL_DEFAULT: i32 = 0;
pub const MPOL_PREFERRED: i32 = 1;
pub const MPOL_BIND: i32 = 2;
pub const MPOL_MF_MOVE: u32 = 1 << 1;
const MPOL_F_NODE: u64 = 1;
const MPOL_F_ADDR: u64 = 1 << 1;
/// Bits in the node masks we pass (nodes 0..1023).
const MAXNODE: usize = 1024;

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    pub read: bool,
    pub write: bool,
    pub private: bool,
    pub path: String,
}

impl Vma {
    /// Whether tierkitd manages this mapping's pages: private, readable and writable anonymous
    /// memory (including `[heap]` and `[stack]`). File mappings stay with the page cache, and the
    /// kernel's special mappings (`[vdso]`, `[vvar]`, `[vsyscall]`) cannot move.
    pub fn managed(&self) -> bool {
        self.read
            && self.write
            && self.private
            && (self.path.is_empty() || self.path == "[heap]" || self.path == "[stack]")
    }

    pub fn pages(&self) -> u64 {
        (self.end - self.start) / PAGE_SIZE
    }
}

/// Parse `/proc/PID/maps` text. An error names the line.
pub fn parse_maps(text: &str) -> Result<Vec<Vma>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = || format!("line {}: `{line}`", i + 1);
        let mut f = line.splitn(6, ' ');
        let range = f.next().ok_or_else(bad)?;
        let perms = f.next().ok_or_else(bad)?.as_bytes();
        let (_off, _dev, _inode) = (f.next(), f.next(), f.next().ok_or_else(bad)?);
        let path = f.next().unwrap_or("").trim().to_string();
        let (a, b) = range.split_once('-').ok_or_else(bad)?;
        let start = u64::from_str_radix(a, 16).map_err(|_| bad())?;
        let end = u64::from_str_radix(b, 16).map_err(|_| bad())?;
        if perms.len() != 4 || end < start {
            return Err(bad());
        }
        out.push(Vma {
            start,
            end,
            read: perms[0] == b'r',
            write: perms[1] == b'w',
            private: perms[3] == b'p',
            path,
        });
    }
    Ok(out)
}

/// Symbolic name of an errno for logs and metrics (`EBUSY`, ...).
pub fn errno_name(e: i32) -> String {
    match e {
        libc::EBUSY => "EBUSY".into(),
        libc::EFAULT => "EFAULT".into(),
        libc::ENOENT => "ENOENT".into(),
        libc::ENOMEM => "ENOMEM".into(),
        libc::EACCES => "EACCES".into(),
        libc::ESRCH => "ESRCH".into(),
        libc::EPERM => "EPERM".into(),
        libc::EINVAL => "EINVAL".into(),
        libc::E2BIG => "E2BIG".into(),
        libc::ENODEV => "ENODEV".into(),
        libc::EIO => "EIO".into(),
        libc::EAGAIN => "EAGAIN".into(),
        e => format!("E{e}"),
    }
}

/// `move_pages(pid, addrs.len(), addrs, nodes, status, flags)`. With `nodes == None` it only
/// queries: `status[i]` gets the node of page i or a negative errno (`-ENOENT`: not present,
/// `-EFAULT`: not mapped). With nodes it moves and `status[i]` gets the node reached or a negative
/// errno (`-EBUSY`, `-EACCES` (shared page), `-ENOMEM`, ...). The return value is the number of
/// pages that could not be moved; `Err` holds the call's own errno (`ESRCH`: the process is gone,
/// `EPERM`: no right to move its pages, `ENODEV`: a bad node).
pub fn move_pages(
    pid: i32,
    addrs: &[u64],
    nodes: Option<&[i32]>,
    status: &mut [i32],
    flags: u32,
) -> io::Result<usize> {
    assert_eq!(addrs.len(), status.len(), "one status per page");
    if let Some(n) = nodes {
        assert_eq!(n.len(), addrs.len(), "one node per page");
    }
    // SAFETY: move_pages reads `count` pointers from `addrs` (u64 has the size and alignment of
    // a pointer on this 64-bit target, checked above), `count` ints from `nodes` when it is not
    // null, and writes `count` ints to `status`. All three slices have `count` elements and
    // outlive the call. The addresses are only looked up in the target's page tables, never
    // dereferenced in our address space.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::c_long,
            addrs.len() as libc::c_ulong,
            addrs.as_ptr() as *const *mut libc::c_void,
            nodes.map_or(std::ptr::null(), |n| n.as_ptr()),
            status.as_mut_ptr(),
            flags as libc::c_int,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

fn nodemask(nodes: &[u32]) -> io::Result<Vec<libc::c_ulong>> {
    let mut mask = vec![0 as libc::c_ulong; MAXNODE / 64];
    for &n in nodes {
        if n as usize >= MAXNODE {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        mask[n as usize / 64] |= 1 << (n % 64);
    }
    Ok(mask)
}

/// `mbind(addr, len, mode, nodes)`: bind a range of the calling process to nodes.
/// `flags` may hold [`MPOL_MF_MOVE`] to move pages already there.
pub fn mbind(addr: u64, len: u64, mode: i32, nodes: &[u32], flags: u32) -> io::Result<()> {
    let mask = nodemask(nodes)?;
    // SAFETY: mbind reads MAXNODE bits from `mask` (a live Vec of MAXNODE/64 words) and changes
    // the memory policy of [addr, addr+len) in our own address space; it never dereferences the
    // range itself.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr as libc::c_ulong,
            len as libc::c_ulong,
            mode as libc::c_ulong,
            if nodes.is_empty() {
                std::ptr::null()
            } else {
                mask.as_ptr()
            },
            if nodes.is_empty() {
                0
            } else {
                MAXNODE as libc::c_ulong + 1
            },
            flags as libc::c_ulong,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `set_mempolicy(mode, nodes)`: the calling thread's default policy for new allocations.
pub fn set_mempolicy(mode: i32, nodes: &[u32]) -> io::Result<()> {
    let mask = nodemask(nodes)?;
    // SAFETY: set_mempolicy reads MAXNODE bits from `mask`, a live Vec of MAXNODE/64 words (or
    // nothing when the pointer is null and maxnode 0).
    let r = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            mode as libc::c_long,
            if nodes.is_empty() {
                std::ptr::null()
            } else {
                mask.as_ptr()
            },
            if nodes.is_empty() {
                0
            } else {
                MAXNODE as libc::c_ulong + 1
            },
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The policy mode and node mask that apply to `addr` in the calling process
/// (`get_mempolicy(MPOL_F_ADDR)`), for checking bindings.
pub fn mempolicy_of(addr: u64) -> io::Result<(i32, Vec<u32>)> {
    let mut mode: libc::c_int = 0;
    let mut mask = vec![0 as libc::c_ulong; MAXNODE / 64];
    // SAFETY: get_mempolicy writes one int to `mode` and MAXNODE bits to `mask` (MAXNODE/64 words).
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            MAXNODE as libc::c_ulong,
            addr as libc::c_ulong,
            MPOL_F_ADDR as libc::c_ulong,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let nodes = (0..MAXNODE as u32)
        .filter(|n| mask[*n as usize / 64] & (1 << (n % 64)) != 0)
        .collect();
    Ok((mode, nodes))
}

/// The node holding the page at `addr` in the calling process
/// (`get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR)`).
pub fn node_of(addr: u64) -> io::Result<i32> {
    let mut node: libc::c_int = -1;
    // SAFETY: get_mempolicy writes one int to `node`; no mask is passed (null, maxnode 0).
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node as *mut libc::c_int,
            std::ptr::null_mut::<libc::c_ulong>(),
            0 as libc::c_ulong,
            addr as libc::c_ulong,
            (MPOL_F_NODE | MPOL_F_ADDR) as libc::c_ulong,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c8a00000-55d0c8a02000 r--p 00000000 08:01 1311 /usr/bin/cat
55d0c8c21000-55d0c8c42000 rw-p 00000000 00:00 0                          [heap]
7f0a1c000000-7f0a1c400000 rw-p 00000000 00:00 0 
7f0a1c400000-7f0a1c600000 rw-s 00000000 00:05 12 /dev/zero (deleted)
7f0a1d000000-7f0a1d001000 rw-p 0001c000 08:01 99 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
7ffc1e2a0000-7ffc1e2c1000 rw-p 00000000 00:00 0                          [stack]
7ffc1e3f1000-7ffc1e3f5000 r--p 00000000 00:00 0                          [vvar]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";

    #[test]
    fn maps_parse_and_pick_anonymous_private_rw() {
        let v = parse_maps(MAPS).unwrap();
        assert_eq!(v.len(), 8);
        assert_eq!(v[1].path, "[heap]");
        assert_eq!(v[2].path, "");
        assert_eq!(v[2].pages(), 1024);
        let managed: Vec<_> = v.iter().filter(|m| m.managed()).map(|m| m.start).collect();
        assert_eq!(
            managed,
            vec![0x55d0c8c21000, 0x7f0a1c000000, 0x7ffc1e2a0000]
        );
        let e = parse_maps("zzz-1 rw-p 0 0:0 0\n").unwrap_err();
        assert!(e.starts_with("line 1"), "{e}");
    }

    #[test]
    fn query_and_bind_own_pages() {
        // Works on a one-node host too: node 0 always exists.
        let len = 16 * PAGE_SIZE as usize;
        let mut buf = vec![0u8; len + PAGE_SIZE as usize];
        let base = (buf.as_mut_ptr() as u64).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        for i in 0..16u64 {
            // touch each page so it is present
            let off = (base - buf.as_ptr() as u64 + i * PAGE_SIZE) as usize;
            buf[off] = 1;
        }
        let addrs: Vec<u64> = (0..16).map(|i| base + i * PAGE_SIZE).collect();
        let mut st = vec![-1; 16];
        assert_eq!(move_pages(0, &addrs, None, &mut st, 0).unwrap(), 0);
        assert!(st.iter().all(|&s| s >= 0), "{st:?}");
        // moving to the node they are on is a no-op that reports the node
        let nodes = vec![st[0]; 16];
        move_pages(0, &addrs, Some(&nodes), &mut st, MPOL_MF_MOVE).unwrap();
        assert!(st.iter().all(|&s| s == nodes[0]), "{st:?}");
        assert_eq!(node_of(base).unwrap(), nodes[0]);
        // an unmapped address reads as -EFAULT
        let mut st1 = [0];
        move_pages(0, &[8 * PAGE_SIZE], None, &mut st1, 0).unwrap();
        assert_eq!(st1[0], -libc::EFAULT);
        // a process that does not exist: ESRCH
        let e = move_pages(i32::MAX - 1, &addrs[..1], None, &mut st1, 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
        drop(buf);

        // mbind a fresh mapping to node 0 and read the policy back
        let mut v = vec![0u8; 64 * PAGE_SIZE as usize];
        let a = (v.as_mut_ptr() as u64).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        mbind(a, 32 * PAGE_SIZE, MPOL_BIND, &[0], MPOL_MF_MOVE).unwrap();
        assert_eq!(mempolicy_of(a).unwrap(), (MPOL_BIND, vec![0]));
        mbind(a, 32 * PAGE_SIZE, MPOL_DEFAULT, &[], 0).unwrap();
        assert_eq!(mempolicy_of(a).unwrap().0, MPOL_DEFAULT);
        let e = mbind(a, PAGE_SIZE, MPOL_BIND, &[4000], 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        v[0] = 1;
    }

    #[test]
    fn thread_policy_round_trip() {
        std::thread::spawn(|| {
            set_mempolicy(MPOL_PREFERRED, &[0]).unwrap();
            set_mempolicy(MPOL_DEFAULT, &[]).unwrap();
            assert_eq!(errno_name(libc::EBUSY), "EBUSY");
            assert_eq!(errno_name(9999), "E9999");
        })
        .join()
        .unwrap();
    }
}
