//! The relay's static files: which file a URL path names (never one outside the root), and
//! its content type.

use std::path::{Component, Path, PathBuf};

/// The file under `root` that the URL path `url_path` names (`index.html` for a directory),
/// or `None` if the path could leave `root`: only plain names are allowed between slashes (no
/// `..`, `.`, empty or absolute parts, no backslash, NUL or `%`-escape), and no hidden files.
pub fn static_path(root: &Path, url_path: &str) -> Option<PathBuf> {
    let relative = url_path.trim_start_matches('/');
    let relative = if relative.is_empty() || relative.ends_with('/') {
        format!("{relative}index.html")
    } else {
        relative.to_owned()
    };
    let plain = |part: &str| {
        !part.is_empty()
            && !part.starts_with('.')
            && !part.contains(['\\', '\0', '%', ':'])
            && Path::new(part)
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
    };
    relative.split('/').all(plain).then(|| root.join(relative))
}

/// The `Content-Type` of a static file, by its extension.
pub fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("txt" | "md" | "ts") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_paths_stay_under_the_root() {
        let root = Path::new("/srv/web");
        for (url, file) in [
            ("/", "/srv/web/index.html"),
            ("", "/srv/web/index.html"),
            ("/chat.js", "/srv/web/chat.js"),
            ("/a/b.css", "/srv/web/a/b.css"),
            ("/a/", "/srv/web/a/index.html"),
            ("index.js", "/srv/web/index.js"),
            ("//etc/passwd", "/srv/web/etc/passwd"),
        ] {
            assert_eq!(static_path(root, url), Some(PathBuf::from(file)), "{url}");
        }
        for url in [
            "/../secret",
            "/a/../../secret",
            "/..",
            "/./index.html",
            "/a//b",
            "/%2e%2e/secret",
            "/a\\..\\secret",
            "/.git/config",
            "/C:/x",
            "/a\0b",
        ] {
            assert_eq!(static_path(root, url), None, "{url:?}");
        }
    }

    #[test]
    fn content_types() {
        for (file, ty) in [
            ("x/proteus_web_bg.wasm", "application/wasm"),
            ("index.js", "text/javascript; charset=utf-8"),
            ("index.html", "text/html; charset=utf-8"),
            ("style.css", "text/css; charset=utf-8"),
            ("index.d.ts", "text/plain; charset=utf-8"),
            ("package.json", "application/json"),
            ("noext", "application/octet-stream"),
        ] {
            assert_eq!(content_type(Path::new(file)), ty, "{file}");
        }
    }
}
