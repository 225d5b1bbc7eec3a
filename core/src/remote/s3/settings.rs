//! Where an S3 remote is and how to reach it: the `s3://bucket/prefix`
//! location, the client's options, and the credentials, region and
//! endpoint found where the AWS tools keep them. Bale never stores
//! credentials; it reads them when a bucket is opened.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};

/// A bucket and a key prefix, from `s3://bucket` or `s3://bucket/prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Location {
    bucket: String,
    /// Without leading or trailing `/`; empty for the whole bucket.
    prefix: String,
}

impl S3Location {
    /// Parses `s3://bucket[/prefix]`. Slashes around the prefix are
    /// dropped; empty segments inside it, `.` and `..` are refused
    /// (S3 keys of that shape are not portable between clients).
    pub fn parse(url: &str) -> Result<S3Location> {
        let rest = url.strip_prefix("s3://").ok_or_else(|| {
            Error::invalid(format!("{url:?} is not an s3:// location; write it as s3://bucket/prefix"))
        })?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        check_bucket_name(bucket)?;
        let prefix = prefix.trim_matches('/');
        if !prefix.is_empty() {
            for segment in prefix.split('/') {
                if segment.is_empty() || segment == "." || segment == ".." {
                    return Err(Error::invalid(format!(
                        "the prefix of {url:?} has an empty, '.' or '..' segment; write it as s3://bucket/a/b"
                    )));
                }
            }
            if prefix.chars().any(char::is_control) {
                return Err(Error::invalid(format!("the prefix of {url:?} has a control character")));
            }
        }
        Ok(S3Location { bucket: bucket.to_string(), prefix: prefix.to_string() })
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The key prefix, without slashes around it; empty for none.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

impl fmt::Display for S3Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.prefix.is_empty() {
            write!(f, "s3://{}", self.bucket)
        } else {
            write!(f, "s3://{}/{}", self.bucket, self.prefix)
        }
    }
}

impl std::str::FromStr for S3Location {
    type Err = Error;
    fn from_str(s: &str) -> Result<S3Location> {
        S3Location::parse(s)
    }
}

/// The rules of S3 bucket names (general purpose buckets): 3 to 63
/// lower-case letters, digits, `.` and `-`, starting and ending with a
/// letter or digit, no `..`, not an IP address.
fn check_bucket_name(name: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::invalid(format!(
            "{name:?} is not a valid S3 bucket name: {why}; bucket names are 3 to 63 lower-case letters, digits, '.' and '-'"
        )))
    };
    if name.len() < 3 || name.len() > 63 {
        return bad("it must be 3 to 63 characters long");
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-') {
        return bad("it has a character other than a-z, 0-9, '.' and '-'");
    }
    let ends_ok = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if !ends_ok(name.bytes().next()) || !ends_ok(name.bytes().last()) {
        return bad("it must start and end with a letter or digit");
    }
    if name.contains("..") {
        return bad("it has two dots in a row");
    }
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return bad("it is an IP address");
    }
    Ok(())
}

/// How requests name the bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum S3Addressing {
    /// Virtual-hosted on AWS (no endpoint given), path-style with an
    /// endpoint (most self-hosted servers).
    #[default]
    Auto,
    /// `https://endpoint/bucket/key`.
    Path,
    /// `https://bucket.endpoint/key`.
    VirtualHosted,
}

/// How to reach the server. Credentials are not here: they come from the
/// environment or the AWS credentials file when the bucket is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Options {
    /// `https://host[:port]`, or `http://` for a local server (then plain
    /// HTTP is allowed). `None`: `AWS_ENDPOINT_URL_S3`, then
    /// `AWS_ENDPOINT_URL`, else AWS itself.
    pub endpoint: Option<String>,
    /// `None`: `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's `region`
    /// in the AWS config file, else `us-east-1`.
    pub region: Option<String>,
    pub addressing: S3Addressing,
    /// Retries of a failed request (server errors, throttling, lost
    /// connections), with exponential backoff.
    pub max_retries: usize,
    pub connect_timeout: Duration,
    /// The longest one request may take, body included.
    pub request_timeout: Duration,
}

impl Default for S3Options {
    fn default() -> S3Options {
        S3Options {
            endpoint: None,
            region: None,
            addressing: S3Addressing::Auto,
            max_retries: 4,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(120),
        }
    }
}

/// Static credentials: an access key id, its secret and, for temporary
/// keys, a session token. Debug shows where they came from, never the keys.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Credentials {
    pub(crate) key_id: String,
    pub(crate) secret: String,
    pub(crate) token: Option<String>,
    pub(crate) from: String,
}

impl S3Credentials {
    /// Keys the caller got elsewhere (a keychain, a prompt).
    pub fn new(key_id: impl Into<String>, secret: impl Into<String>, token: Option<String>) -> S3Credentials {
        S3Credentials { key_id: key_id.into(), secret: secret.into(), token, from: "the caller".into() }
    }
}

impl fmt::Debug for S3Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Credentials").field("from", &self.from).finish_non_exhaustive()
    }
}

/// A checked endpoint URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub scheme: String,
    /// Host and port.
    pub authority: String,
    /// Empty, or starting with `/`.
    pub path: String,
}

impl Endpoint {
    fn parse(url: &str, from: &str) -> Result<Endpoint> {
        let invalid = |why: &str| {
            Error::invalid(format!(
                "the S3 endpoint from {from} {why}; write it as https://host[:port] (or http:// for a local server)"
            ))
        };
        let (scheme, rest) = url.split_once("://").ok_or_else(|| invalid("is not a URL"))?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(invalid("is neither http:// nor https://"));
        }
        let rest = rest.trim_end_matches('/');
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        // The URL itself is not echoed: it might hold a password.
        if authority.contains('@') {
            return Err(invalid(
                "has a user name or password in it (give credentials through AWS_ACCESS_KEY_ID or a profile)",
            ));
        }
        if authority.is_empty() || authority.starts_with(':') {
            return Err(invalid("has no host"));
        }
        if url.contains(['?', '#']) || url.chars().any(|c| c.is_control() || c == ' ') {
            return Err(invalid("has a query, a fragment or a space"));
        }
        Ok(Endpoint { scheme, authority: authority.to_string(), path: path.to_string() })
    }

    pub fn is_http(&self) -> bool {
        self.scheme == "http"
    }

    /// The URL requests go to, for a bucket addressed virtual-hosted or by path.
    pub fn url(&self, bucket: &str, virtual_hosted: bool) -> String {
        if virtual_hosted {
            format!("{}://{bucket}.{}{}", self.scheme, self.authority, self.path)
        } else {
            format!("{}://{}{}", self.scheme, self.authority, self.path)
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}{}", self.scheme, self.authority, self.path)
    }
}

/// What opening a bucket needs beyond the location, resolved from the
/// options and the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// `None`: unsigned requests (a public bucket).
    pub credentials: Option<S3Credentials>,
    pub region: String,
    pub endpoint: Option<Endpoint>,
    pub virtual_hosted: bool,
}

/// Resolves credentials, region and endpoint. `var` reads an environment
/// variable (the process's own, or a table in tests); files are read from
/// where the variables point, or under `HOME` (`USERPROFILE` on Windows).
///
/// Credentials: `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (with
/// `AWS_SESSION_TOKEN`), else the profile `AWS_PROFILE` (or `default`) in
/// `AWS_SHARED_CREDENTIALS_FILE` (or `~/.aws/credentials`), then in
/// `AWS_CONFIG_FILE` (or `~/.aws/config`, sections `[profile name]`),
/// else none. An explicit `AWS_PROFILE` that names no keys is an error:
/// bale reads static keys only (not SSO, roles or instance metadata).
pub(crate) fn resolve(options: &S3Options, var: &dyn Fn(&str) -> Option<String>) -> Result<Resolved> {
    let env = AwsEnv::new(var)?;
    let credentials = env.credentials()?;
    Ok(Resolved { credentials, ..env.place(options)? })
}

/// Region and endpoint only, for credentials given by the caller.
pub(crate) fn resolve_place(options: &S3Options, var: &dyn Fn(&str) -> Option<String>) -> Result<Resolved> {
    AwsEnv::new(var)?.place(options)
}

/// The environment and the AWS config file, as far as bale reads them.
struct AwsEnv<'a> {
    var: &'a dyn Fn(&str) -> Option<String>,
    home: Option<PathBuf>,
    profile: String,
    explicit_profile: bool,
    config_path: Option<PathBuf>,
    config: Ini,
}

impl<'a> AwsEnv<'a> {
    fn new(var: &'a dyn Fn(&str) -> Option<String>) -> Result<AwsEnv<'a>> {
        let mut env = AwsEnv {
            var,
            home: None,
            profile: String::new(),
            explicit_profile: false,
            config_path: None,
            config: Vec::new(),
        };
        env.home = env.var("HOME").or_else(|| env.var("USERPROFILE")).map(PathBuf::from);
        let profile = env.var("AWS_PROFILE");
        env.explicit_profile = profile.is_some();
        env.profile = profile.unwrap_or_else(|| "default".to_string());
        env.config_path = env.file("AWS_CONFIG_FILE", "config");
        env.config = match &env.config_path {
            Some(p) => read_ini(p)?,
            None => Vec::new(),
        };
        Ok(env)
    }

    /// A variable, unless unset or empty.
    fn var(&self, name: &str) -> Option<String> {
        (self.var)(name).filter(|v| !v.is_empty())
    }

    fn file(&self, var: &str, name: &str) -> Option<PathBuf> {
        self.var(var).map(PathBuf::from).or_else(|| self.home.as_ref().map(|h| h.join(".aws").join(name)))
    }

    /// The profile's section of the config file: `[default]` (or
    /// `[profile default]`), `[profile name]`.
    fn config_section(&self) -> String {
        if self.profile != "default" {
            format!("profile {}", self.profile)
        } else if has_section(&self.config, "default") {
            "default".to_string()
        } else {
            "profile default".to_string()
        }
    }

    fn credentials(&self) -> Result<Option<S3Credentials>> {
        match (self.var("AWS_ACCESS_KEY_ID"), self.var("AWS_SECRET_ACCESS_KEY")) {
            (Some(key_id), Some(secret)) => {
                let token = self.var("AWS_SESSION_TOKEN");
                return Ok(Some(S3Credentials { key_id, secret, token, from: "the environment".into() }));
            }
            (Some(_), None) | (None, Some(_)) => {
                return Err(Error::invalid(
                    "only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set; set both, or neither to use a profile",
                ));
            }
            (None, None) => {}
        }
        let creds_path = self.file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
        let creds = match &creds_path {
            Some(p) => read_ini(p)?,
            None => Vec::new(),
        };
        let found = match self.keys_in(&creds, &self.profile, &creds_path)? {
            Some(c) => Some(c),
            None => self.keys_in(&self.config, &self.config_section(), &self.config_path)?,
        };
        if found.is_none() && self.explicit_profile {
            return Err(Error::invalid(format!(
                "AWS_PROFILE names profile {}, which has no aws_access_key_id and aws_secret_access_key in {} or {}; \
                 bale reads static keys only: set them there or in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
                self.profile,
                show(&creds_path),
                show(&self.config_path)
            )));
        }
        Ok(found)
    }

    fn keys_in(&self, ini: &Ini, section: &str, path: &Option<PathBuf>) -> Result<Option<S3Credentials>> {
        let profile = &self.profile;
        let path = show(path);
        match (lookup(ini, section, "aws_access_key_id"), lookup(ini, section, "aws_secret_access_key")) {
            (Some(key_id), Some(secret)) => Ok(Some(S3Credentials {
                key_id,
                secret,
                token: lookup(ini, section, "aws_session_token"),
                from: format!("profile {profile} in {path}"),
            })),
            (None, None) => Ok(None),
            _ => Err(Error::invalid(format!(
                "profile {profile} in {path} has only one of aws_access_key_id and aws_secret_access_key; give both"
            ))),
        }
    }

    /// Region and endpoint (no credentials).
    fn place(&self, options: &S3Options) -> Result<Resolved> {
        let region = options
            .region
            .clone()
            .filter(|r| !r.is_empty())
            .or_else(|| self.var("AWS_REGION"))
            .or_else(|| self.var("AWS_DEFAULT_REGION"))
            .or_else(|| lookup(&self.config, &self.config_section(), "region"))
            .unwrap_or_else(|| "us-east-1".to_string());
        if !region.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(Error::invalid(format!("{region:?} is not an S3 region name (like us-east-1)")));
        }
        let endpoint = match (&options.endpoint, self.var("AWS_ENDPOINT_URL_S3"), self.var("AWS_ENDPOINT_URL")) {
            (Some(e), _, _) if !e.is_empty() => Some(Endpoint::parse(e, "the options")?),
            (_, Some(e), _) => Some(Endpoint::parse(&e, "AWS_ENDPOINT_URL_S3")?),
            (_, _, Some(e)) => Some(Endpoint::parse(&e, "AWS_ENDPOINT_URL")?),
            _ => None,
        };
        let virtual_hosted = match options.addressing {
            S3Addressing::Auto => endpoint.is_none(),
            S3Addressing::Path => false,
            S3Addressing::VirtualHosted => true,
        };
        Ok(Resolved { credentials: None, region, endpoint, virtual_hosted })
    }
}

fn show(p: &Option<PathBuf>) -> String {
    p.as_ref().map_or_else(|| "(no home folder)".to_string(), |p| p.display().to_string())
}

/// An INI file as (section, key, value) rows, in file order.
type Ini = Vec<(String, String, String)>;

/// Reads the INI files of the AWS tools: `[section]` lines, `key = value`
/// lines, `#` and `;` comments. Indented lines continue a nested setting
/// (`s3 =` followed by indented keys) and are skipped. A missing file is
/// an empty one.
fn read_ini(path: &Path) -> Result<Ini> {
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map_err(|_| Error::invalid(format!("{} is not UTF-8 text; fix or remove it", path.display())))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&format!("cannot read {}", path.display()), e)),
    };
    Ok(parse_ini(&text))
}

fn parse_ini(text: &str) -> Ini {
    let mut rows = Vec::new();
    let mut section: Option<String> = None;
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = Some(name.split_whitespace().collect::<Vec<_>>().join(" "));
        } else if let (Some(s), Some((k, v))) = (&section, line.split_once('=')) {
            rows.push((s.clone(), k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    rows
}

/// The last value of `key` in `section` (a later line wins), if not empty.
fn lookup(ini: &Ini, section: &str, key: &str) -> Option<String> {
    ini.iter().rev().find(|(s, k, _)| s == section && k == key).map(|(_, _, v)| v.clone()).filter(|v| !v.is_empty())
}

fn has_section(ini: &Ini, section: &str) -> bool {
    ini.iter().any(|(s, _, _)| s == section)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    /// A folder under the system's temporary folder, removed when dropped.
    struct Temp(PathBuf);
    impl Temp {
        fn new() -> Temp {
            let p = std::env::temp_dir().join(format!(
                "bale-s3-settings-{}-{:016x}",
                std::process::id(),
                crate::objects::random_u64()
            ));
            std::fs::create_dir_all(&p).unwrap();
            Temp(p)
        }
        fn file(&self, name: &str, text: &str) -> String {
            let p = self.0.join(name);
            std::fs::write(&p, text).unwrap();
            p.to_str().unwrap().to_string()
        }
    }
    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn locations_parse_with_and_without_a_prefix() {
        let l = S3Location::parse("s3://bale-test").unwrap();
        assert_eq!((l.bucket(), l.prefix()), ("bale-test", ""));
        assert_eq!(l.to_string(), "s3://bale-test");
        let l = S3Location::parse("s3://bale-test/").unwrap();
        assert_eq!(l.prefix(), "");
        let l: S3Location = "s3://my.bucket-1//team/objects/".parse().unwrap();
        assert_eq!((l.bucket(), l.prefix()), ("my.bucket-1", "team/objects"));
        assert_eq!(l.to_string(), "s3://my.bucket-1/team/objects");
    }

    #[test]
    fn bad_locations_are_invalid_arguments() {
        for url in [
            "https://bucket/x",
            "S3://bucket",
            "s3:/bucket",
            "bucket/prefix",
            "s3://",
            "s3://ab",
            "s3://Upper",
            "s3://under_score",
            "s3://-dash",
            "s3://dash-",
            "s3://a..b",
            "s3://192.168.1.2",
            &format!("s3://{}", "a".repeat(64)),
            "s3://bucket/a//b",
            "s3://bucket/a/../b",
            "s3://bucket/./b",
            "s3://bucket/a\nb",
        ] {
            let e = S3Location::parse(url).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{url}");
        }
        assert!(S3Location::parse(&format!("s3://{}", "a".repeat(63))).is_ok());
    }

    #[test]
    fn environment_keys_come_first() {
        let r = resolve(
            &S3Options::default(),
            &env(&[
                ("AWS_ACCESS_KEY_ID", "AKIDENV"),
                ("AWS_SECRET_ACCESS_KEY", "secretenv"),
                ("AWS_SESSION_TOKEN", "tok"),
                ("AWS_REGION", "eu-west-3"),
                ("HOME", "/nonexistent-home"),
            ]),
        )
        .unwrap();
        let c = r.credentials.unwrap();
        assert_eq!((c.key_id.as_str(), c.secret.as_str(), c.token.as_deref()), ("AKIDENV", "secretenv", Some("tok")));
        assert_eq!(r.region, "eu-west-3");
        assert!(r.endpoint.is_none() && r.virtual_hosted);
        let one = resolve(&S3Options::default(), &env(&[("AWS_ACCESS_KEY_ID", "AKIDENV")])).unwrap_err();
        assert_eq!(one.kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn profiles_are_read_from_the_shared_credentials_file() {
        let t = Temp::new();
        let creds = t.file(
            "credentials",
            "# comment\n[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s3cr3t/default+\n\n\
             [work]\n; another comment\naws_access_key_id=AKIDWORK\naws_secret_access_key=workSecret\naws_session_token = wtok\n\
             [half]\naws_access_key_id = AKIDHALF\n",
        );
        let config = t.file(
            "config",
            "[default]\nregion = us-west-2\n[profile work]\nregion = eu-central-1\ns3 =\n  addressing_style = path\n\
             [profile cfgkeys]\naws_access_key_id = AKIDCFG\naws_secret_access_key = cfgSecret\n[profile nokeys]\nregion = ap-south-1\n",
        );
        let base = [("AWS_SHARED_CREDENTIALS_FILE", creds.as_str()), ("AWS_CONFIG_FILE", config.as_str())];
        let with = |extra: &[(&str, &str)]| {
            let mut all = base.to_vec();
            all.extend_from_slice(extra);
            resolve(&S3Options::default(), &env(&all))
        };

        let r = with(&[]).unwrap();
        let c = r.credentials.as_ref().unwrap();
        assert_eq!(
            (c.key_id.as_str(), c.secret.as_str(), c.token.as_deref()),
            ("AKIDDEFAULT", "s3cr3t/default+", None)
        );
        assert_eq!(r.region, "us-west-2");

        let r = with(&[("AWS_PROFILE", "work")]).unwrap();
        let c = r.credentials.as_ref().unwrap();
        assert_eq!(
            (c.key_id.as_str(), c.secret.as_str(), c.token.as_deref()),
            ("AKIDWORK", "workSecret", Some("wtok"))
        );
        assert_eq!(r.region, "eu-central-1");
        // The environment's region beats the profile's, the options' beat both.
        assert_eq!(with(&[("AWS_PROFILE", "work"), ("AWS_DEFAULT_REGION", "sa-east-1")]).unwrap().region, "sa-east-1");
        let opts = S3Options { region: Some("ca-central-1".into()), ..S3Options::default() };
        let mut all = base.to_vec();
        all.push(("AWS_REGION", "sa-east-1"));
        assert_eq!(resolve(&opts, &env(&all)).unwrap().region, "ca-central-1");

        // Keys in the config file's profile section.
        let r = with(&[("AWS_PROFILE", "cfgkeys")]).unwrap();
        assert_eq!(r.credentials.unwrap().key_id, "AKIDCFG");

        // Environment keys beat any profile.
        let r = with(&[("AWS_ACCESS_KEY_ID", "AKIDENV"), ("AWS_SECRET_ACCESS_KEY", "e")]).unwrap();
        assert_eq!(r.credentials.unwrap().key_id, "AKIDENV");

        for bad in ["half", "nokeys", "missing"] {
            let e = with(&[("AWS_PROFILE", bad)]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}");
            assert!(e.message().contains(bad), "{e}");
            assert!(!e.message().contains("AKIDHALF"), "{e}");
        }
    }

    #[test]
    fn profiles_are_found_under_home_and_none_means_unsigned() {
        let t = Temp::new();
        std::fs::create_dir_all(t.0.join(".aws")).unwrap();
        t.file(".aws/credentials", "[default]\naws_access_key_id = AKIDHOME\naws_secret_access_key = h\n");
        let home = t.0.to_str().unwrap();
        let r = resolve(&S3Options::default(), &env(&[("HOME", home)])).unwrap();
        assert_eq!(r.credentials.unwrap().key_id, "AKIDHOME");
        let r = resolve(&S3Options::default(), &env(&[("USERPROFILE", home)])).unwrap();
        assert_eq!(r.credentials.unwrap().key_id, "AKIDHOME");

        let empty = Temp::new();
        let r = resolve(&S3Options::default(), &env(&[("HOME", empty.0.to_str().unwrap())])).unwrap();
        assert_eq!(r.credentials, None);
        assert_eq!(r.region, "us-east-1");
        assert_eq!(resolve(&S3Options::default(), &env(&[])).unwrap().credentials, None);
    }

    #[test]
    fn credentials_never_show_in_debug_output() {
        let r = resolve(
            &S3Options::default(),
            &env(&[
                ("AWS_ACCESS_KEY_ID", "AKIDSHOWN"),
                ("AWS_SECRET_ACCESS_KEY", "SECRETSHOWN"),
                ("AWS_SESSION_TOKEN", "TOKSHOWN"),
            ]),
        )
        .unwrap();
        let shown = format!("{r:?} {:?}", r.credentials);
        for s in ["AKIDSHOWN", "SECRETSHOWN", "TOKSHOWN"] {
            assert!(!shown.contains(s), "{shown}");
        }
        assert!(shown.contains("the environment"), "{shown}");
    }

    #[test]
    fn endpoints_choose_http_and_addressing() {
        let opts = |e: &str, a| S3Options { endpoint: Some(e.into()), addressing: a, ..S3Options::default() };
        let r = resolve(&opts("http://127.0.0.1:9000/", S3Addressing::Auto), &env(&[])).unwrap();
        let ep = r.endpoint.unwrap();
        assert!(ep.is_http() && !r.virtual_hosted);
        assert_eq!(ep.url("b-1", false), "http://127.0.0.1:9000");
        let r = resolve(&opts("HTTPS://s3.example.com", S3Addressing::VirtualHosted), &env(&[])).unwrap();
        let ep = r.endpoint.unwrap();
        assert!(!ep.is_http() && r.virtual_hosted);
        assert_eq!(ep.url("b-1", true), "https://b-1.s3.example.com");
        let r = resolve(&S3Options::default(), &env(&[("AWS_ENDPOINT_URL", "http://localhost:4566")])).unwrap();
        assert_eq!(r.endpoint.unwrap().to_string(), "http://localhost:4566");
        let r = resolve(
            &S3Options::default(),
            &env(&[("AWS_ENDPOINT_URL", "http://a:1"), ("AWS_ENDPOINT_URL_S3", "http://s3only:2")]),
        )
        .unwrap();
        assert_eq!(r.endpoint.unwrap().to_string(), "http://s3only:2");
        for bad in ["ftp://x", "localhost:9000", "http://", "http://user:pw@host", "http://h/?x=1", "http://:9000"] {
            let e = resolve(&opts(bad, S3Addressing::Auto), &env(&[])).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}: {e}");
            assert!(!e.message().contains("pw@"), "{e}");
        }
    }

    #[test]
    fn ini_continuations_and_later_lines() {
        let ini = parse_ini("[ profile  x ]\na = 1\nnested =\n  a = 2\na = 3\nno equals sign\n");
        assert_eq!(lookup(&ini, "profile x", "a").as_deref(), Some("3"));
        assert_eq!(lookup(&ini, "profile x", "nested"), None);
        assert!(!has_section(&ini, "x"));
    }
}
