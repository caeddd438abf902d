//! Skills: folders with a `SKILL.md` (YAML front matter `name`, `description`, optional
//! `tools` naming built-in tools and `mcp_servers` naming configured MCP servers; the body is
//! the instructions), in the Agent Skills layout other tools use (unknown front-matter keys are
//! ignored). A run offered skills gets a `load_skill` tool listing them; once the model loads
//! one, its instructions join the system prompt and its tools (the built-in ones it names and
//! every tool of its MCP servers) are offered from the next round on.
//!
//! ```
//! use service::skills::SkillSet;
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir(dir.path().join("arithmetic"))?;
//! std::fs::write(
//!     dir.path().join("arithmetic/SKILL.md"),
//!     "---\nname: arithmetic\ndescription: Exact sums and products.\ntools: [calculator]\n\
//!      mcp_servers: [maths]\n---\nAlways use the calculator for arithmetic.\n",
//! )?;
//! let skills = SkillSet::load(&[dir.path().to_path_buf()])?;
//! let skill = skills.get("arithmetic").unwrap();
//! assert_eq!(skill.tools, ["calculator"]);
//! assert_eq!(skill.mcp_servers, ["maths"]);
//! assert_eq!(skill.instructions, "Always use the calculator for arithmetic.");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod run;

pub use run::{LOAD_SKILL, SkillRunError};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// One skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    /// Its name: what `load_skill` takes.
    pub name: String,
    /// When to load it, for the model choosing.
    pub description: String,
    /// The built-in tools it brings, by name.
    pub tools: Vec<String>,
    /// The MCP servers whose tools it brings, by their configured names.
    pub mcp_servers: Vec<String>,
    /// The instructions: the body of `SKILL.md`.
    pub instructions: String,
    /// Where its `SKILL.md` is.
    pub path: PathBuf,
}

/// The skills found in some directories, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkillSet {
    skills: BTreeMap<String, Skill>,
}

/// Why skills could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// A directory or file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A `SKILL.md` is not a skill.
    #[error("{path} is not a skill: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong, and what to write instead.
        reason: String,
    },
    /// Two skills have one name.
    #[error("two skills are named `{name}`: {first} and {second}; rename one")]
    Duplicate {
        /// The name.
        name: String,
        /// The first file.
        first: String,
        /// The second file.
        second: String,
    },
}

/// The front matter of a `SKILL.md`. Other tools' keys (`license`, `allowed-tools`, …) are
/// ignored.
#[derive(Deserialize)]
struct FrontMatter {
    name: String,
    description: String,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    mcp_servers: Vec<String>,
}

impl SkillSet {
    /// The skills of `dirs`: each is a skill folder itself (it holds a `SKILL.md`) or holds
    /// skill folders.
    ///
    /// # Errors
    ///
    /// An unreadable directory, a `SKILL.md` that is not a skill, two skills of one name.
    pub fn load(dirs: &[PathBuf]) -> Result<Self, SkillError> {
        let mut set = SkillSet::default();
        for dir in dirs {
            if dir.join(SKILL_FILE).is_file() {
                set.insert(Skill::read(&dir.join(SKILL_FILE))?)?;
                continue;
            }
            let entries = std::fs::read_dir(dir).map_err(|source| io(dir, source))?;
            let mut folders: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.join(SKILL_FILE).is_file())
                .collect();
            // Listing order differs between systems; errors and lists should not.
            folders.sort();
            for folder in folders {
                set.insert(Skill::read(&folder.join(SKILL_FILE))?)?;
            }
        }
        Ok(set)
    }

    fn insert(&mut self, skill: Skill) -> Result<(), SkillError> {
        if let Some(first) = self.skills.get(&skill.name) {
            return Err(SkillError::Duplicate {
                name: skill.name,
                first: first.path.display().to_string(),
                second: skill.path.display().to_string(),
            });
        }
        self.skills.insert(skill.name.clone(), skill);
        Ok(())
    }

    /// The skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    /// Every skill, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }

    /// The names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.skills.keys().map(String::as_str)
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }
}

impl Skill {
    /// Reads the `SKILL.md` at `path`.
    ///
    /// # Errors
    ///
    /// An unreadable file, or one that is not a skill.
    pub fn read(path: &Path) -> Result<Self, SkillError> {
        let text = std::fs::read_to_string(path).map_err(|source| io(path, source))?;
        Self::parse(&text, path)
    }

    /// The skill `text` (a `SKILL.md` at `path`) describes.
    ///
    /// # Errors
    ///
    /// No front matter, front matter that is not YAML with a `name` and a `description`, an
    /// unusable name.
    pub fn parse(text: &str, path: &Path) -> Result<Self, SkillError> {
        let invalid = |reason: String| SkillError::Invalid {
            path: path.display().to_string(),
            reason,
        };
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let rest = text
            .strip_prefix("---\n")
            .or_else(|| text.strip_prefix("---\r\n"))
            .ok_or_else(|| {
                invalid(
                    "it does not start with `---` front matter; begin it with `---`, `name: …`, \
                     `description: …`, `---`"
                        .to_owned(),
                )
            })?;
        let (yaml, body) = split_front_matter(rest)
            .ok_or_else(|| invalid("its front matter has no closing `---` line".to_owned()))?;
        let front: FrontMatter = serde_saphyr::from_str(yaml)
            .map_err(|error| invalid(format!("its front matter is not usable YAML: {error}")))?;
        let name = front.name.trim().to_owned();
        if name.is_empty()
            || name.len() > 64
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        {
            return Err(invalid(format!(
                "its name `{name}` is not 1 to 64 letters, digits, `-` or `_`"
            )));
        }
        let description = front.description.trim().to_owned();
        if description.is_empty() {
            return Err(invalid(
                "its description is empty; say when the skill should be loaded".to_owned(),
            ));
        }
        Ok(Skill {
            name,
            description,
            tools: front.tools,
            mcp_servers: front.mcp_servers,
            instructions: body.trim().to_owned(),
            path: path.to_path_buf(),
        })
    }
}

/// The front matter and the body after its closing `---` line.
fn split_front_matter(rest: &str) -> Option<(&str, &str)> {
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

fn io(path: &Path, source: std::io::Error) -> SkillError {
    SkillError::Io {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Skill, SkillError> {
        Skill::parse(text, Path::new("skills/x/SKILL.md"))
    }

    #[test]
    fn front_matter_and_body() {
        let skill = parse(
            "---\nname: pdf-forms\ndescription: Fill PDF forms.\nlicense: MIT\n\
             allowed-tools: [Bash]\ntools: [read_file]\nmcp_servers: [pdf]\n---\n\n\
             # Filling forms\nStep one.\n",
        )
        .unwrap();
        assert_eq!(skill.name, "pdf-forms");
        assert_eq!(skill.description, "Fill PDF forms.");
        assert_eq!(skill.tools, ["read_file"]);
        assert_eq!(skill.mcp_servers, ["pdf"]);
        assert_eq!(skill.instructions, "# Filling forms\nStep one.");
        // No tools and no body are fine.
        let bare = parse("---\nname: a\ndescription: b\n---").unwrap();
        assert!(bare.tools.is_empty() && bare.mcp_servers.is_empty());
        assert!(bare.instructions.is_empty());
    }

    #[test]
    fn what_is_not_a_skill_says_why() {
        for (text, expected) in [
            ("name: a\n", "does not start with `---`"),
            ("---\nname: a\ndescription: b\n", "no closing `---`"),
            ("---\nname: a\n---\n", "not usable YAML"),
            ("---\nname: a b\ndescription: c\n---\n", "is not 1 to 64"),
            (
                "---\nname: a\ndescription: '  '\n---\n",
                "description is empty",
            ),
            ("---\n: [\n---\n", "not usable YAML"),
        ] {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
            assert!(error.contains("skills/x/SKILL.md"), "{error}");
        }
    }

    #[test]
    fn a_directory_of_skills_or_one_skill_folder() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["beta", "alpha"] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
            std::fs::write(
                dir.path().join(name).join(SKILL_FILE),
                format!("---\nname: {name}\ndescription: The {name} skill.\n---\nDo {name}.\n"),
            )
            .unwrap();
        }
        std::fs::create_dir(dir.path().join("not-a-skill")).unwrap();
        let set = SkillSet::load(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!(set.names().collect::<Vec<_>>(), ["alpha", "beta"]);
        let one = SkillSet::load(&[dir.path().join("alpha")]).unwrap();
        assert_eq!(one.names().collect::<Vec<_>>(), ["alpha"]);
        let twice = SkillSet::load(&[dir.path().to_path_buf(), dir.path().join("alpha")]);
        assert!(matches!(twice, Err(SkillError::Duplicate { .. })));
        let missing = SkillSet::load(&[dir.path().join("nowhere")]).unwrap_err();
        assert!(missing.to_string().contains("nowhere"), "{missing}");
    }
}
