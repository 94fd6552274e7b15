//! Private files: the home directory is 0700; `state.db` (and its `-wal`/`-shm`), the API key
//! file and the chronos-dev key are 0600. New files are created that way; existing ones are
//! tightened at start (docs/design.md#hermes). Unix only; elsewhere these are no-ops.

use std::path::Path;

/// Files under the home that hold secrets or conversations.
const PRIVATE_FILES: &[&str] = &["api_key", "chronos-dev/key.pem"];

/// Creates `home` if needed and makes it, the store file and the key files private.
/// Failures are logged, never fatal (a read-only home still serves).
pub fn secure_home(home: &Path, store_path: &Path) {
    if let Err(e) = create_private_dir(home) {
        tracing::warn!(home = %home.display(), error = %e, "cannot create the home directory privately");
        return;
    }
    let db = home.join(store_path);
    let mut files: Vec<std::path::PathBuf> = PRIVATE_FILES.iter().map(|f| home.join(f)).collect();
    for suffix in ["", "-wal", "-shm"] {
        files.push(std::path::PathBuf::from(format!("{}{suffix}", db.display())));
    }
    for dir in [home.to_path_buf(), home.join("chronos-dev")] {
        tighten(&dir, 0o700);
    }
    for f in files {
        tighten(&f, 0o600);
    }
}

/// Creates a directory (and its parents) with mode 0700 for the ones it creates.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// Writes `text` to a new or truncated file created with mode 0600 (and tightens an existing
/// one), its directory created 0700.
pub fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(d) = path.parent() {
        create_private_dir(d)?;
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts.open(path)?;
    tighten(path, 0o600);
    f.write_all(text.as_bytes())
}

/// Sets `mode` on an existing regular file or directory that allows more; never follows a
/// symlink, never loosens.
fn tighten(path: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let Ok(meta) = std::fs::symlink_metadata(path) else { return };
        if meta.file_type().is_symlink() || meta.permissions().mode() & 0o777 & !mode == 0 {
            return;
        }
        let new = meta.permissions().mode() & 0o777 & mode;
        if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(new)) {
            tracing::warn!(path = %path.display(), error = %e, "cannot make the file private");
        }
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
}
