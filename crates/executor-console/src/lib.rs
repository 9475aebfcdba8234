//! The web console: its built files (`web/dist`, embedded at compile time by `build.rs`) and the
//! rules for serving them. `index.html` is never cached (it names the current assets); hashed
//! assets are immutable; the `.br`/`.gz` twins the build wrote are sent to clients that accept
//! them; a path with an extension that is not a file is 404; any other path is the app, so deep
//! links work. It knows nothing of the API, the engine or authentication: the shell is public
//! and holds no data.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "$EXECUTOR_CONSOLE_DIST"]
struct Dist;

/// Serve the console from this directory instead of the embedded build, read at each request
/// (working on the console: `npm run bundle` and reload, without rebuilding the binary).
pub const DIR_ENV: &str = "EXECUTOR_CONSOLE_DIR";

/// A file of the console: its bytes, type and content hash.
struct Found {
    data: std::borrow::Cow<'static, [u8]>,
    mime: String,
    hash: [u8; 32],
}

fn lookup(name: &str) -> Option<Found> {
    match std::env::var_os(DIR_ENV) {
        Some(dir) => from_dir(std::path::Path::new(&dir), name),
        None => Dist::get(name).map(|f| Found {
            mime: f.metadata.mimetype().to_owned(),
            hash: f.metadata.sha256_hash(),
            data: f.data,
        }),
    }
}

fn from_dir(dir: &std::path::Path, name: &str) -> Option<Found> {
    // Only plain relative names: no `..`, no absolute paths.
    if name
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return None;
    }
    let file = rust_embed::utils::read_file_from_fs(&dir.join(name)).ok()?;
    Some(Found {
        mime: file.metadata.mimetype().to_owned(),
        hash: file.metadata.sha256_hash(),
        data: file.data,
    })
}

/// Answers a request for `path` (the URL path, with its leading `/`). Only GET and HEAD reach
/// files; other methods get 405.
pub fn serve(method: &Method, path: &str, headers: &HeaderMap) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return (
            StatusCode::METHOD_NOT_ALLOWED,
            [(header::ALLOW, "GET, HEAD")],
            "Method Not Allowed",
        )
            .into_response();
    }
    let relative = path.trim_start_matches('/');
    let (name, policy) = match relative {
        "" | "index.html" => (INDEX, Caching::Never),
        _ if !relative.ends_with(".br")
            && !relative.ends_with(".gz")
            && lookup(relative).is_some() =>
        {
            let caching = if relative.starts_with("assets/") {
                Caching::Immutable
            } else {
                Caching::Revalidate
            };
            (relative, caching)
        }
        // `/favicon.ico`, `/assets/gone-123.js`: a file that is not here (an old tab asking for
        // an asset of a previous build must not get the app's HTML as JavaScript).
        _ if has_extension(relative) => {
            return (
                StatusCode::NOT_FOUND,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                "Not Found",
            )
                .into_response();
        }
        _ => (INDEX, Caching::Never),
    };
    file(name, policy, headers, method == Method::HEAD)
}

const INDEX: &str = "index.html";

/// The console loads only its own files and talks only to this origin (its components set
/// inline styles); nothing may frame it.
const CONSOLE_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
     frame-ancestors 'none'";

/// Whether the console was built into this binary (false: the placeholder page).
pub fn is_built() -> bool {
    Dist::iter().any(|name| name.starts_with("assets/"))
}

#[derive(Clone, Copy)]
enum Caching {
    Never,
    Revalidate,
    Immutable,
}

impl Caching {
    fn header(self) -> &'static str {
        match self {
            Caching::Never => "no-store",
            Caching::Revalidate => "no-cache",
            Caching::Immutable => "public, max-age=31536000, immutable",
        }
    }
}

fn has_extension(path: &str) -> bool {
    path.rsplit('/').next().is_some_and(|last| {
        last.rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && !ext.is_empty())
    })
}

/// The encodings the client accepts, in our order of preference (brotli is smaller).
fn preferred_encodings(headers: &HeaderMap) -> impl Iterator<Item = (&'static str, &'static str)> {
    let accepted = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|item| {
            let mut parts = item.split(';');
            let coding = parts.next()?.trim().to_ascii_lowercase();
            // `br;q=0` refuses brotli
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            (!refused).then_some(coding)
        })
        .collect::<Vec<_>>();
    [("br", ".br"), ("gzip", ".gz")]
        .into_iter()
        .filter(move |(coding, _)| accepted.iter().any(|a| a == coding))
}

fn file(name: &str, caching: Caching, headers: &HeaderMap, head_only: bool) -> Response {
    let Some(original) = lookup(name) else {
        return (StatusCode::NOT_FOUND, "Not Found").into_response();
    };
    let mime = original.mime.clone();
    let etag = format!("\"{}\"", hex_prefix(&original.hash));
    let mut builder = Response::builder()
        .header(header::CACHE_CONTROL, caching.header())
        .header(header::VARY, "accept-encoding");
    if name == INDEX {
        builder = builder.header(header::CONTENT_SECURITY_POLICY, CONSOLE_POLICY);
    }
    if !matches!(caching, Caching::Never) {
        builder = builder.header(header::ETAG, &etag);
        let matches = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
        if matches {
            return builder
                .status(StatusCode::NOT_MODIFIED)
                .body(Body::empty())
                .unwrap_or_else(|_| StatusCode::NOT_MODIFIED.into_response());
        }
    }
    let (data, encoding) = preferred_encodings(headers)
        .find_map(|(coding, suffix)| {
            lookup(&format!("{name}{suffix}")).map(|f| (f.data, Some(coding)))
        })
        .unwrap_or((original.data, None));
    builder = builder
        .header(header::CONTENT_TYPE, content_type(&mime))
        .header(header::CONTENT_LENGTH, data.len());
    if let Some(coding) = encoding {
        builder = builder.header(header::CONTENT_ENCODING, coding);
    }
    let body = if head_only {
        Body::empty()
    } else {
        Body::from(data.into_owned())
    };
    builder
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Text types are UTF-8 (the build writes nothing else).
fn content_type(mime: &str) -> HeaderValue {
    let value = if (mime.starts_with("text/") || mime == "application/javascript")
        && !mime.contains("charset")
    {
        format!("{mime}; charset=utf-8")
    } else {
        mime.to_owned()
    };
    HeaderValue::from_str(&value)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"))
}

fn hex_prefix(hash: &[u8]) -> String {
    hash.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str, accept: Option<&str>) -> Response {
        let mut headers = HeaderMap::new();
        if let Some(a) = accept {
            headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(a).unwrap());
        }
        serve(&Method::GET, path, &headers)
    }

    /// An asset the build precompressed (small ones it leaves alone).
    fn asset(ext: &str) -> Option<String> {
        Dist::iter().map(|n| n.into_owned()).find(|n| {
            n.starts_with("assets/") && n.ends_with(ext) && Dist::get(&format!("{n}.br")).is_some()
        })
    }

    #[test]
    fn the_shell_is_never_cached_and_deep_links_get_it() {
        for path in [
            "/",
            "/index.html",
            "/integrations/github",
            "/resume/exec_1",
            "/executions/x/y",
        ] {
            let r = get(path, None);
            assert_eq!(r.status(), StatusCode::OK, "{path}");
            assert_eq!(r.headers()[header::CACHE_CONTROL], "no-store", "{path}");
            assert!(
                r.headers()[header::CONTENT_TYPE]
                    .to_str()
                    .unwrap()
                    .starts_with("text/html"),
                "{path}"
            );
        }
    }

    #[test]
    fn a_missing_file_is_404_not_the_shell() {
        for path in [
            "/favicon.ico",
            "/assets/gone-0123abcd.js",
            "/robots.txt",
            "/a/b.css",
        ] {
            assert_eq!(get(path, None).status(), StatusCode::NOT_FOUND, "{path}");
        }
    }

    #[test]
    fn hashed_assets_are_immutable_typed_and_precompressed() {
        let Some(js) = asset(".js") else {
            assert!(!is_built(), "a built console has JavaScript assets");
            return;
        };
        let plain = get(&format!("/{js}"), None);
        assert_eq!(plain.status(), StatusCode::OK);
        assert_eq!(
            plain.headers()[header::CACHE_CONTROL],
            "public, max-age=31536000, immutable"
        );
        assert_eq!(
            plain.headers()[header::CONTENT_TYPE],
            "text/javascript; charset=utf-8"
        );
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        let br = get(&format!("/{js}"), Some("gzip, deflate, br"));
        assert_eq!(br.headers()[header::CONTENT_ENCODING], "br");
        let gz = get(&format!("/{js}"), Some("gzip, br;q=0"));
        assert_eq!(gz.headers()[header::CONTENT_ENCODING], "gzip");
        let length = |r: &Response| {
            r.headers()[header::CONTENT_LENGTH]
                .to_str()
                .unwrap()
                .parse::<usize>()
                .unwrap()
        };
        assert!(length(&br) < length(&plain));
        // the compressed twins are not files of their own
        assert_eq!(
            get(&format!("/{js}.br"), None).status(),
            StatusCode::NOT_FOUND
        );
    }

    #[test]
    fn a_matching_etag_is_not_modified() {
        let Some(js) = asset(".js") else { return };
        let first = get(&format!("/{js}"), None);
        let etag = first.headers()[header::ETAG].clone();
        let mut headers = HeaderMap::new();
        headers.insert(header::IF_NONE_MATCH, etag);
        let again = serve(&Method::GET, &format!("/{js}"), &headers);
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    }

    #[test]
    fn only_reads_are_served() {
        let r = serve(&Method::POST, "/", &HeaderMap::new());
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
        let head = serve(&Method::HEAD, "/", &HeaderMap::new());
        assert_eq!(head.status(), StatusCode::OK);
    }

    #[test]
    fn a_console_dir_serves_only_names_inside_it() {
        let dist = std::path::Path::new(env!("EXECUTOR_CONSOLE_DIST"));
        assert!(from_dir(dist, "index.html").is_some_and(|f| f.mime == "text/html"));
        for escape in [
            "../Cargo.toml",
            "assets/../../x",
            "/etc/passwd",
            "a//b",
            "./index.html",
        ] {
            assert!(from_dir(dist, escape).is_none(), "{escape}");
        }
    }
}
