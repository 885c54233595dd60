//! The ACL file (`aclfile`): every user, one `user <name> <rules>` line each, in ACL
//! LIST's form. Read at startup (a refused line stops the server, as it stops Redis)
//! and by ACL LOAD, which changes nothing unless every line is accepted; written whole
//! by ACL SAVE (`replace_file`). A relative path is read from `dir`, where Redis,
//! which works there, finds it.

use std::path::PathBuf;

use crate::server::Server;

/// The file as configured (the name errors give) and where it is; `None` if no file is
/// configured.
pub fn configured(server: &Server) -> Option<(String, PathBuf)> {
    let name = server.config.value("aclfile");
    if name.is_empty() {
        return None;
    }
    let path = server.config.dir.join(&name);
    Some((name, path))
}

/// Replaces the users with the file's; the error says why nothing changed.
pub fn load(server: &Server, name: &str, path: &std::path::Path) -> Result<(), String> {
    let text = std::fs::read(path).map_err(|e| {
        // As strerror words it, without Rust's "(os error N)".
        let reason = e.to_string();
        let reason = reason.split(" (os error").next().unwrap_or_default();
        format!("Error loading ACLs, opening file '{name}': {reason}")
    })?;
    server.users.load(name, &text)
}

pub fn save(server: &Server, path: &std::path::Path) -> std::io::Result<()> {
    crate::replace_file::write_atomically(path, server.users.file_text().as_bytes())
}
