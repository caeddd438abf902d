//! The names the model sees: `{server}__{tool}`, within what every provider accepts.

use std::collections::HashSet;

/// The longest tool name providers accept.
pub(crate) const MAX_TOOL_NAME_LEN: usize = 64;
/// Between the server's name and the tool's.
pub(crate) const SEPARATOR: &str = "__";

/// The model-facing name of each tool of `server`, index-aligned with `originals`.
///
/// Each name is `{server}__{tool}` with every character of the tool's name outside
/// `[A-Za-z0-9_-]` replaced by `_`, cut to 64 bytes. Tools whose name needs no change keep it;
/// when two tools would end up with the same name, the one whose original name sorts first keeps
/// it and the others get `_2`, `_3`… (cut further to fit), so the result does not depend on the
/// order the server lists its tools in. `server` must already be a valid server name (at most
/// 32 bytes).
pub(crate) fn model_names(server: &str, originals: &[&str]) -> Vec<String> {
    let prefix = format!("{server}{SEPARATOR}");
    let room = MAX_TOOL_NAME_LEN.saturating_sub(prefix.len()).max(1);
    let bases: Vec<String> = originals
        .iter()
        .map(|original| {
            let mut base: String = original
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            if base.is_empty() {
                base.push_str("tool");
            }
            base.truncate(room);
            base
        })
        .collect();

    let mut names: Vec<Option<String>> = vec![None; originals.len()];
    let mut used = HashSet::new();
    // Names that need no change first, in the server's order (originals are unique per server,
    // so only an exact duplicate can lose here).
    for (i, base) in bases.iter().enumerate() {
        if base == originals[i] && used.insert(base.clone()) {
            names[i] = Some(format!("{prefix}{base}"));
        }
    }
    // Then the others, by original name, each taking the first free variant.
    let mut rest: Vec<usize> = (0..originals.len())
        .filter(|&i| names[i].is_none())
        .collect();
    rest.sort_by(|&a, &b| originals[a].cmp(originals[b]).then(a.cmp(&b)));
    for i in rest {
        let base = &bases[i];
        let mut candidate = base.clone();
        let mut n = 2usize;
        while !used.insert(candidate.clone()) {
            let suffix = format!("_{n}");
            let mut cut = room.saturating_sub(suffix.len()).min(base.len());
            while !base.is_char_boundary(cut) {
                cut -= 1;
            }
            candidate = format!("{}{suffix}", &base[..cut]);
            n += 1;
        }
        names[i] = Some(format!("{prefix}{candidate}"));
    }
    names.into_iter().map(Option::unwrap_or_default).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_sanitizes() {
        assert_eq!(
            model_names("fs", &["read_file", "get-sum", "a.b/c d", "ünï", ""]),
            [
                "fs__read_file",
                "fs__get-sum",
                "fs__a_b_c_d",
                "fs___n_",
                "fs__tool"
            ]
        );
    }

    #[test]
    fn collisions_are_resolved_by_original_name_not_listing_order() {
        // "a b" sorts before "a.b", so it gets `_2` whatever the listing order.
        let forward = model_names("s", &["a.b", "a_b", "a b"]);
        assert_eq!(forward, ["s__a_b_3", "s__a_b", "s__a_b_2"]);
        let backward = model_names("s", &["a b", "a_b", "a.b"]);
        assert_eq!(backward, ["s__a_b_2", "s__a_b", "s__a_b_3"]);
    }

    #[test]
    fn long_names_fit_in_64_bytes_and_stay_distinct() {
        let server = "a".repeat(32);
        let long_a = format!("{}x", "t".repeat(100));
        let long_b = format!("{}y", "t".repeat(100));
        let names = model_names(&server, &[&long_a, &long_b, "t.t"]);
        for name in &names {
            assert!(name.len() <= MAX_TOOL_NAME_LEN, "{name}");
        }
        assert_eq!(names[0].len(), 64);
        assert!(names[1].ends_with("_2"), "{}", names[1]);
        assert_ne!(names[0], names[1]);
        assert_eq!(names[2], format!("{server}__t_t"));
    }

    #[test]
    fn every_name_is_valid_and_unique() {
        let originals = ["x", "x_2", "x.2", "x 2", "x/2", "x?"];
        let names = model_names("srv", &originals);
        let unique: HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert_eq!(names[0], "srv__x");
        assert_eq!(names[1], "srv__x_2");
    }
}
