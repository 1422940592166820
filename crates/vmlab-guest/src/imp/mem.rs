//! Reading and writing a guest process's memory from the guest kernel.

use libc as c;

/// Reads `len` bytes at `addr` of process `pid`; `Err(errno)` if any of it is unmapped.
pub(crate) fn read(pid: i32, addr: u64, len: usize) -> Result<Vec<u8>, i32> {
    let mut buf = vec![0u8; len];
    if len == 0 {
        return Ok(buf);
    }
    let local = c::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: len };
    let remote = c::iovec { iov_base: addr as *mut c::c_void, iov_len: len };
    // SAFETY: `local` describes `buf`, which lives across the call; the remote side is only
    // read by the kernel on the other process's behalf.
    let n = unsafe { c::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(errno());
    }
    if n as usize != len {
        return Err(c::EFAULT);
    }
    Ok(buf)
}

/// Reads a NUL-terminated string at `addr` (without the NUL), at most `max` bytes; a page at
/// a time so that a string ending just before an unmapped page reads.
pub(crate) fn read_cstr(pid: i32, addr: u64, max: usize) -> Result<Vec<u8>, i32> {
    if addr == 0 {
        return Err(c::EFAULT);
    }
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < max {
        let chunk = (4096 - (at % 4096)) as usize;
        let bytes = read(pid, at, chunk)?;
        if let Some(end) = bytes.iter().position(|&b| b == 0) {
            out.extend_from_slice(&bytes[..end]);
            return Ok(out);
        }
        out.extend_from_slice(&bytes);
        at += chunk as u64;
    }
    Err(c::ENAMETOOLONG)
}

/// Writes `data` at `addr` of process `pid`.
pub(crate) fn write(pid: i32, addr: u64, data: &[u8]) -> Result<(), i32> {
    if data.is_empty() {
        return Ok(());
    }
    let local = c::iovec { iov_base: data.as_ptr() as *mut c::c_void, iov_len: data.len() };
    let remote = c::iovec { iov_base: addr as *mut c::c_void, iov_len: data.len() };
    // SAFETY: `local` describes `data`, which outlives the call and is only read.
    let n = unsafe { c::process_vm_writev(pid, &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(errno());
    }
    if n as usize != data.len() {
        return Err(c::EFAULT);
    }
    Ok(())
}

/// The calling thread's errno.
pub(crate) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(c::EIO)
}

/// Writes `data` at `addr` of process `pid` through /proc/PID/mem, which a tracer may do
/// even where the page is read-only to the process itself: the guest kernel's scratch pages,
/// which the guest must not be able to change between the guest kernel's check and the host's
/// use of what it wrote there.
pub(crate) fn poke(pid: i32, addr: u64, data: &[u8]) -> Result<(), i32> {
    use std::os::unix::fs::FileExt;
    if data.is_empty() {
        return Ok(());
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(format!("/proc/{pid}/mem"))
        .map_err(|e| e.raw_os_error().unwrap_or(c::EIO))?;
    file.write_all_at(data, addr).map_err(|e| e.raw_os_error().unwrap_or(c::EFAULT))
}
