//! Python virtualenvs under `target/`, one per tool, installed from a pinned requirements file
//! and reused while that file is unchanged.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cmd::{step, workspace_root};

/// The `bin` folder of the virtualenv `dir/venv`, with `xtask/<requirements>` installed unless
/// exactly those are already (a stamp file holds what was installed). `label` names the steps.
pub(crate) fn ensure(dir: &Path, requirements: &str, label: &str) -> Result<PathBuf, String> {
    let requirements = workspace_root().join("xtask").join(requirements);
    let wanted = fs::read_to_string(&requirements)
        .map_err(|err| format!("{}: {err}", requirements.display()))?;
    let venv = dir.join("venv");
    let bin = venv.join("bin");
    let stamp = venv.join("installed-requirements.txt");
    if bin.join("python").exists()
        && fs::read_to_string(&stamp).is_ok_and(|installed| installed == wanted)
    {
        eprintln!("{label}: reusing {}", venv.display());
        return Ok(bin);
    }
    let _ = fs::remove_dir_all(&venv);
    fs::create_dir_all(dir).map_err(|err| format!("{}: {err}", dir.display()))?;
    let python = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
    step(
        &format!("{label} virtualenv"),
        Command::new(python).args(["-m", "venv"]).arg(&venv),
    )
    .map_err(|err| format!("{err} (is python3 with the venv module installed?)"))?;
    step(
        &format!("{label} install"),
        Command::new(bin.join("pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements),
    )?;
    fs::write(&stamp, wanted).map_err(|err| format!("{}: {err}", stamp.display()))?;
    Ok(bin)
}
