//! The effective configuration printed (`--check-config`, the start-up
//! log), secrets redacted, and which changes a reload cannot apply.
//!
//! ```text
//!  Resolved::render ─► TOML, each line with its source; passwords, TSIG
//!     secrets and tokens shown as <secret>
//!  Resolved::needs_restart(new) ─► options changed that are not RELOADABLE
//! ```

use super::{toml_value, Config, Resolved, Source};
use std::fmt::Write as _;

impl Resolved {
    /// The effective configuration as a TOML file, each line saying where
    /// its value came from. Unset options are commented out.
    pub fn render(&self) -> String {
        let mut out = String::from("# mongodns-server effective configuration\n");
        match &self.file {
            Some(f) => {
                let _ = writeln!(out, "# config file: {}", f.display());
            }
            None => out.push_str("# config file: none\n"),
        }
        out.push_str("# precedence: flag > env > file > default\n");
        for (name, value) in self.config.lines() {
            let source = self.sources.get(name).copied().unwrap_or(Source::Default);
            let value = match name {
                "mongodb_uri" => redact_password(&value),
                "tsig_key" => redact_tsig_secrets(&self.config.tsig_key),
                "control_token" | "api_key" if !value.is_empty() => "\"<secret>\"".into(),
                _ => value,
            };
            if value.is_empty() {
                let _ = writeln!(out, "# {name} = (unset)");
            } else {
                let _ = writeln!(out, "{name} = {value}  # {}", source.label());
            }
        }
        out
    }

    /// Options whose value differs in `new` and that only take effect at
    /// start.
    pub fn needs_restart(&self, new: &Config) -> Vec<&'static str> {
        let old = self.config.lines();
        let new = new.lines();
        old.iter()
            .zip(&new)
            .filter(|(a, b)| a.1 != b.1 && !RELOADABLE.contains(&a.0))
            .map(|(a, _)| a.0)
            .collect()
    }
}

/// `mongodb://user:secret@host` ─► `mongodb://user:***@host`.
fn redact_password(uri: &str) -> String {
    match (uri.find("://"), uri.rfind('@')) {
        (Some(s), Some(at)) if at > s => match uri[s + 3..at].find(':') {
            Some(c) => format!("{}:***{}", &uri[..s + 3 + c], &uri[at..]),
            None => uri.to_string(),
        },
        _ => uri.to_string(),
    }
}

/// `tsig_key` as TOML with every secret replaced by `<secret>`.
fn redact_tsig_secrets(keys: &[String]) -> String {
    let shown: Vec<String> = keys
        .iter()
        .map(|k| {
            // Split as the key parser splits: at any whitespace.
            let mut words = k.split_whitespace();
            let spec = words.next().unwrap_or("");
            let head = spec.rsplit_once(':').map_or("", |(h, _)| h);
            let scope: Vec<&str> = words.collect();
            format!("{head}:<secret> {}", scope.join(" "))
                .trim_end()
                .to_string()
        })
        .collect();
    toml_value(&shown)
}

/// Options SIGHUP applies without a restart.
pub const RELOADABLE: &[&str] = &[
    "log",
    "query_log_sample",
    "cache_max_ttl",
    "cache_negative_ttl",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Cli;

    fn cli(argv: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("mongodns-server").chain(argv.iter().copied())).unwrap()
    }

    #[test]
    fn passwords_are_not_printed() {
        assert_eq!(
            redact_password("\"mongodb://u:pw@h:1/?x=1\""),
            "\"mongodb://u:***@h:1/?x=1\""
        );
        assert_eq!(redact_password("\"mongodb://h\""), "\"mongodb://h\"");
        let keys = cli(&[
            "--tsig-key",
            "hmac-sha512:k:c2VjcmV0 zones=a.test.",
            "--tsig-key",
            "k2:c2VjcmV0",
            "--control-token",
            "t0k3n-t0k3n",
        ])
        .resolve()
        .unwrap()
        .render();
        assert!(!keys.contains("c2VjcmV0"), "{keys}");
        assert!(
            !keys.contains("t0k3n") && keys.contains("control_token = \"<secret>\""),
            "{keys}"
        );
        assert!(
            keys.contains(r#"tsig_key = ["hmac-sha512:k:<secret> zones=a.test.", "k2:<secret>"]"#),
            "{keys}"
        );
    }
}
