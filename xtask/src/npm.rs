//! npm installs under `target/`, one prefix per tool, from a committed `package.json` and
//! `package-lock.json` (`npm ci`, install scripts not run) and reused while those are unchanged.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::cmd::{step, workspace_root};

/// The npm files copied into the prefix; their concatenation is the stamp.
const NPM_FILES: &[&str] = &["package.json", "package-lock.json"];

/// Installs `xtask/<source>/package*.json` into `prefix` with `npm ci`, unless exactly those are
/// installed (a stamp file holds what was) and `prefix/<entry>` exists. `label` names the step;
/// `hint` says what the install needs when it fails.
pub(crate) fn ensure(
    source: &str,
    prefix: &Path,
    entry: &str,
    label: &str,
    hint: &str,
) -> Result<(), String> {
    let source = workspace_root().join("xtask").join(source);
    let mut wanted = String::new();
    for file in NPM_FILES {
        let path = source.join(file);
        wanted.push_str(
            &fs::read_to_string(&path).map_err(|err| format!("{}: {err}", path.display()))?,
        );
    }
    let stamp = prefix.join("installed-package-lock.json");
    if prefix.join(entry).exists()
        && fs::read_to_string(&stamp).is_ok_and(|installed| installed == wanted)
    {
        eprintln!("{label}: reusing {}", prefix.display());
        return Ok(());
    }
    let _ = fs::remove_dir_all(prefix);
    fs::create_dir_all(prefix).map_err(|err| format!("{}: {err}", prefix.display()))?;
    for file in NPM_FILES {
        fs::copy(source.join(file), prefix.join(file))
            .map_err(|err| format!("copying {file} to {}: {err}", prefix.display()))?;
    }
    step(
        &format!("{label} install"),
        Command::new("npm")
            .args([
                "ci",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--prefix",
            ])
            .arg(prefix),
    )
    .map_err(|err| format!("{err} ({hint})"))?;
    if !prefix.join(entry).exists() {
        return Err(format!(
            "npm ci finished but {} is missing; check {}",
            prefix.join(entry).display(),
            source.join("package-lock.json").display()
        ));
    }
    fs::write(&stamp, wanted).map_err(|err| format!("{}: {err}", stamp.display()))?;
    Ok(())
}
