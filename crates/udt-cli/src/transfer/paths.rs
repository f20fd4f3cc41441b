//! Safe path handling for `udt recv`: names a sender claims are validated, and every file is
//! reached from the receive directory through directory descriptors opened one component at a
//! time with `O_NOFOLLOW` (the `openat` discipline), so no name, `..` or symbolic link, even
//! one planted inside the receive directory, can make the receiver write outside it.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Longest relative name accepted, bytes (Linux's `PATH_MAX`).
pub const MAX_NAME_BYTES: usize = 4096;
/// Longest single component accepted, bytes: `NAME_MAX` (255) less room for the temporary
/// name's `.` prefix and `.udt-part` suffix.
pub const MAX_COMPONENT_BYTES: usize = 240;
/// Deepest tree accepted, components.
pub const MAX_DEPTH: usize = 256;
/// Suffix of the temporary name a file is received under.
pub const PART_SUFFIX: &str = ".udt-part";

/// Why a name claimed by a sender is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum NameError {
    /// Empty name or empty component (`a//b`, leading or trailing `/`): also catches
    /// absolute paths.
    Empty,
    /// Longer than [`MAX_NAME_BYTES`], a component longer than [`MAX_COMPONENT_BYTES`], or
    /// deeper than [`MAX_DEPTH`].
    TooLong,
    /// A `.` or `..` component.
    DotComponent,
    /// A NUL, control character or backslash.
    BadCharacter,
    /// A component that is our own temporary name pattern.
    Reserved,
}

impl std::fmt::Display for NameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NameError::Empty => "empty component or absolute path",
            NameError::TooLong => "name too long or too deep",
            NameError::DotComponent => "'.' or '..' component",
            NameError::BadCharacter => "control character, NUL or backslash in name",
            NameError::Reserved => "name ends in the reserved suffix .udt-part",
        })
    }
}

/// Splits a sender's relative name (`/`-separated) into validated components.
pub fn validate_name(name: &str) -> Result<Vec<&str>, NameError> {
    if name.len() > MAX_NAME_BYTES {
        return Err(NameError::TooLong);
    }
    let comps: Vec<&str> = name.split('/').collect();
    if comps.len() > MAX_DEPTH {
        return Err(NameError::TooLong);
    }
    for c in &comps {
        validate_component(c)?;
    }
    Ok(comps)
}

fn validate_component(c: &str) -> Result<(), NameError> {
    if c.is_empty() {
        return Err(NameError::Empty);
    }
    if c.len() > MAX_COMPONENT_BYTES {
        return Err(NameError::TooLong);
    }
    if c == "." || c == ".." {
        return Err(NameError::DotComponent);
    }
    // Backslash is legal on Unix but a separator elsewhere; control characters make names
    // that mislead in listings. Neither is worth accepting from a remote peer.
    if c.chars().any(|ch| ch.is_control() || ch == '\\') {
        return Err(NameError::BadCharacter);
    }
    if c.ends_with(PART_SUFFIX) {
        return Err(NameError::Reserved);
    }
    Ok(())
}

/// The temporary name a file `name` is received under, in the same directory.
pub fn part_name(name: &str) -> String {
    format!(".{name}{PART_SUFFIX}")
}

/// What is at a name in a directory (without following a final symbolic link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// Nothing.
    Missing,
    /// A regular file of this many bytes.
    File(u64),
    /// A directory.
    Dir,
    /// A symbolic link, device, socket or FIFO.
    Other,
}

/// An open directory; every operation is relative to it and follows no symbolic link.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

fn cstr(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in name"))
}

/// Turns a libc return value into an `io::Result`.
fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Dir {
    /// Opens (creating it and its parents if `create`) the receive directory chosen by the
    /// local user; this path is trusted, symbolic links in it are followed.
    pub fn open_root(path: &Path, create: bool) -> io::Result<Dir> {
        if create {
            std::fs::create_dir_all(path)?;
        }
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))?;
        // SAFETY: `c` is a valid NUL-terminated string; the result is checked.
        let fd = check(unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: `fd` is a descriptor we just opened and own.
        Ok(Dir {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Opens the subdirectory `name` (one validated component), creating it if missing and
    /// `create`. A symbolic link there is an error (`ELOOP`/`ENOTDIR`), never followed.
    pub fn open_subdir(&self, name: &str, create: bool) -> io::Result<Dir> {
        let c = cstr(name)?;
        if create {
            // SAFETY: valid descriptor and C string; the result is checked.
            let r = unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o755) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::AlreadyExists {
                    return Err(e);
                }
            }
        }
        // SAFETY: as above.
        let fd = check(unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        })
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::ENOTDIR) => io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("'{name}' exists and is not a directory (symbolic links are not followed)"),
            ),
            _ => e,
        })?;
        // SAFETY: `fd` is a descriptor we just opened and own.
        Ok(Dir {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Walks down `comps` (validated components), creating missing directories if `create`.
    pub fn walk(&self, comps: &[&str], create: bool) -> io::Result<Dir> {
        let mut cur = self.open_subdir(".", false)?;
        for c in comps {
            cur = cur.open_subdir(c, create)?;
        }
        Ok(cur)
    }

    /// What is at `name`, without following a symbolic link.
    pub fn entry(&self, name: &str) -> io::Result<Entry> {
        let c = cstr(name)?;
        // SAFETY: zeroed stat is a valid out-parameter; descriptor and string are valid.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::NotFound {
                Ok(Entry::Missing)
            } else {
                Err(e)
            };
        }
        Ok(match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Entry::File(st.st_size as u64),
            libc::S_IFDIR => Entry::Dir,
            _ => Entry::Other,
        })
    }

    /// Opens the regular file `name` for reading; a symbolic link is an error.
    pub fn open_read(&self, name: &str) -> io::Result<File> {
        self.open_file(name, libc::O_RDONLY)
    }

    /// Opens or creates the regular file `name` for reading and writing, keeping its
    /// contents; a symbolic link is an error.
    pub fn open_rw_create(&self, name: &str) -> io::Result<File> {
        self.open_file(name, libc::O_RDWR | libc::O_CREAT)
    }

    fn open_file(&self, name: &str, flags: libc::c_int) -> io::Result<File> {
        let c = cstr(name)?;
        // SAFETY: valid descriptor and C string; the result is checked.
        let fd = check(unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o644 as libc::c_uint,
            )
        })?;
        // SAFETY: `fd` is a descriptor we just opened and own.
        let f = unsafe { File::from_raw_fd(fd) };
        if !f.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("'{name}' is not a regular file"),
            ));
        }
        Ok(f)
    }

    /// Renames `from` to `to` in this directory. Unless `replace`, fails with
    /// `AlreadyExists` if `to` exists (atomically, `RENAME_NOREPLACE`).
    pub fn rename(&self, from: &str, to: &str, replace: bool) -> io::Result<()> {
        let (a, b) = (cstr(from)?, cstr(to)?);
        let dfd = self.fd.as_raw_fd();
        if replace {
            // SAFETY: valid descriptors and C strings; the result is checked.
            check(unsafe { libc::renameat(dfd, a.as_ptr(), dfd, b.as_ptr()) })?;
            return Ok(());
        }
        // SAFETY: as above.
        let r =
            unsafe { libc::renameat2(dfd, a.as_ptr(), dfd, b.as_ptr(), libc::RENAME_NOREPLACE) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINVAL) {
            return Err(e);
        }
        // A file system without RENAME_NOREPLACE: a hard link fails if `to` exists.
        // SAFETY: as above.
        check(unsafe { libc::linkat(dfd, a.as_ptr(), dfd, b.as_ptr(), 0) })?;
        self.unlink(from)
    }

    /// Removes the file `name`.
    pub fn unlink(&self, name: &str) -> io::Result<()> {
        let c = cstr(name)?;
        // SAFETY: valid descriptor and C string; the result is checked.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) })?;
        Ok(())
    }

    /// Bytes available to an unprivileged writer on this directory's file system.
    pub fn available_bytes(&self) -> io::Result<u64> {
        // SAFETY: zeroed statvfs is a valid out-parameter; the descriptor is valid.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        check(unsafe { libc::fstatvfs(self.fd.as_raw_fd(), &mut st) })?;
        Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
    }
}

/// The name under which the sender transfers `path` (its last component, as `scp -r` does:
/// `a/b/tree` becomes `tree`); `.`, `..` and trailing slashes are resolved first.
pub fn root_name(path: &Path) -> io::Result<String> {
    let resolved;
    let p = match path.file_name() {
        Some(_) if !path.ends_with("..") && !path.ends_with(".") => path,
        _ => {
            resolved = path.canonicalize()?;
            resolved.as_path()
        }
    };
    let name = p
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "cannot send '/'"))?;
    to_utf8(name)
}

/// A file name as UTF-8; other names are refused rather than mangled.
pub fn to_utf8(name: &OsStr) -> io::Result<String> {
    name.to_str().map(str::to_owned).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("name {name:?} is not valid UTF-8"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_accepted() {
        assert_eq!(validate_name("a").unwrap(), vec!["a"]);
        assert_eq!(
            validate_name("tree/sub dir/file.txt").unwrap(),
            vec!["tree", "sub dir", "file.txt"]
        );
        assert_eq!(validate_name(".hidden").unwrap(), vec![".hidden"]);
        assert_eq!(validate_name("..x").unwrap(), vec!["..x"]);
        assert_eq!(validate_name("été").unwrap(), vec!["été"]);
    }

    #[test]
    fn traversal_and_absolute_names_are_refused() {
        assert_eq!(validate_name("/etc/passwd"), Err(NameError::Empty));
        assert_eq!(validate_name(""), Err(NameError::Empty));
        assert_eq!(validate_name("a//b"), Err(NameError::Empty));
        assert_eq!(validate_name("a/"), Err(NameError::Empty));
        assert_eq!(validate_name(".."), Err(NameError::DotComponent));
        assert_eq!(validate_name("../x"), Err(NameError::DotComponent));
        assert_eq!(validate_name("a/../../x"), Err(NameError::DotComponent));
        assert_eq!(validate_name("a/./b"), Err(NameError::DotComponent));
        assert_eq!(validate_name("."), Err(NameError::DotComponent));
    }

    #[test]
    fn weird_characters_and_sizes_are_refused() {
        assert_eq!(validate_name("a\0b"), Err(NameError::BadCharacter));
        assert_eq!(validate_name("a\nb"), Err(NameError::BadCharacter));
        assert_eq!(validate_name("..\\x"), Err(NameError::BadCharacter));
        assert_eq!(validate_name("x\u{7f}"), Err(NameError::BadCharacter));
        assert_eq!(validate_name(&"a".repeat(241)), Err(NameError::TooLong));
        assert!(validate_name(&"a".repeat(240)).is_ok());
        assert_eq!(validate_name(&"a/".repeat(300)), Err(NameError::TooLong));
        assert_eq!(validate_name(&"a".repeat(5000)), Err(NameError::TooLong));
        assert_eq!(validate_name("d/.f.udt-part"), Err(NameError::Reserved));
    }

    #[test]
    fn symlinked_directories_are_not_followed() {
        let root_dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root_dir.path().join("evil")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("f"), root_dir.path().join("link-file"))
            .unwrap();
        let root = Dir::open_root(root_dir.path(), false).unwrap();
        assert!(root.walk(&["evil"], true).is_err());
        assert!(root.walk(&["evil", "deeper"], true).is_err());
        assert_eq!(root.entry("evil").unwrap(), Entry::Other);
        // A planted symbolic link as the file name itself is refused too.
        assert!(root.open_rw_create("link-file").is_err());
        assert!(!outside.path().join("f").exists());
        assert!(!outside.path().join("deeper").exists());
        // Ordinary directories are created and reused.
        let d = root.walk(&["x", "y"], true).unwrap();
        d.open_rw_create("z").unwrap();
        assert_eq!(d.entry("z").unwrap(), Entry::File(0));
        assert!(root_dir.path().join("x/y/z").is_file());
    }

    #[test]
    fn rename_does_not_replace_unless_asked() {
        let t = tempfile::tempdir().unwrap();
        let d = Dir::open_root(t.path(), false).unwrap();
        std::fs::write(t.path().join("a"), b"new").unwrap();
        std::fs::write(t.path().join("b"), b"old").unwrap();
        let e = d.rename("a", "b", false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(t.path().join("b")).unwrap(), b"old");
        d.rename("a", "b", true).unwrap();
        assert_eq!(std::fs::read(t.path().join("b")).unwrap(), b"new");
    }

    #[test]
    fn root_names_follow_scp() {
        assert_eq!(root_name(Path::new("a/b/tree")).unwrap(), "tree");
        assert_eq!(root_name(Path::new("a/b/tree/")).unwrap(), "tree");
        assert_eq!(root_name(Path::new("file.txt")).unwrap(), "file.txt");
        let cwd = std::env::current_dir().unwrap();
        let expected = cwd.file_name().unwrap().to_str().unwrap().to_owned();
        assert_eq!(root_name(Path::new(".")).unwrap(), expected);
        assert!(root_name(Path::new("/")).is_err());
    }
}
