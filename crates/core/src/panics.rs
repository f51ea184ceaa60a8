//! Panics of another crate's decoder caught as errors, quietly.
//!
//! Some decoders of other crates assert what a file says (a length, an
//! offset) instead of returning an error; a reader that calls them on
//! untrusted bytes catches the panic and reports a malformed file. The
//! process's panic hook would still print "thread ... panicked at ..."
//! before that clean error: [`catch_quiet`] keeps the hook silent for
//! panics inside it and returns their message instead.

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, PanicHookInfo};
use std::sync::Once;

thread_local! {
    /// How many [`catch_quiet`] calls this thread is inside.
    static QUIET: Cell<u32> = const { Cell::new(0) };
    /// Where the last quiet panic of this thread happened.
    static WHERE: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Puts a hook before the process's panic hook (once): silent for panics
/// inside [`catch_quiet`] on the panicking thread, the previous hook for
/// every other panic.
fn install() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
            if QUIET.try_with(Cell::get).unwrap_or(0) == 0 {
                previous(info);
                return;
            }
            let at = info
                .location()
                .map(|l| format!("{}:{}:{}", short_path(l.file()), l.line(), l.column()));
            let _ = WHERE.try_with(|w| {
                if let Ok(mut w) = w.try_borrow_mut() {
                    *w = at;
                }
            });
        }));
    });
}

/// A source path as from the crate's own directory: a dependency's path
/// in the local package cache (`.../registry/src/<index>/name-1.2.3/src/x.rs`)
/// becomes `name-1.2.3/src/x.rs`.
fn short_path(file: &str) -> &str {
    const CACHE: &str = "/registry/src/";
    match file.find(CACHE) {
        Some(at) => {
            let rest = file.get(at + CACHE.len()..).unwrap_or(file);
            rest.split_once('/').map_or(rest, |(_, p)| p)
        }
        None => file,
    }
}

/// Leaves a quiet section, however it ends.
struct Section;

impl Drop for Section {
    fn drop(&mut self) {
        QUIET.with(|q| q.set(q.get().saturating_sub(1)));
    }
}

/// Runs `f`; a panic in it (on this thread) comes back as `Err` with its
/// message and where it happened, and the panic hook prints nothing for
/// it. Panics elsewhere are reported as before. The first call puts a
/// hook in front of the process's own (which it then calls for every
/// other panic); a hook set after that replaces it, and panics inside
/// `catch_quiet` are then printed again, still caught.
///
/// ```
/// use dataformats_core::panics::catch_quiet;
///
/// let v: Vec<u32> = vec![1, 2, 3];
/// let i = v.len() + 2;
/// let e = catch_quiet(|| v[i]).unwrap_err();
/// assert!(e.contains("index out of bounds"), "{e}");
/// assert_eq!(catch_quiet(|| v[1]), Ok(2));
/// ```
pub fn catch_quiet<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install();
    QUIET.with(|q| q.set(q.get().saturating_add(1)));
    let section = Section;
    let r = std::panic::catch_unwind(AssertUnwindSafe(f));
    drop(section);
    r.map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        match WHERE.with(|w| w.borrow_mut().take()) {
            Some(at) => format!("{message}, at {at}"),
            None => message,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::short_path;

    #[test]
    fn cached_dependencies_are_named_from_their_own_directory() {
        assert_eq!(
            short_path(
                "/home/u/.cargo/registry/src/index-1234/arrow-buffer-59.3.2/src/buffer/boolean.rs"
            ),
            "arrow-buffer-59.3.2/src/buffer/boolean.rs"
        );
        assert_eq!(short_path("crates/core/src/x.rs"), "crates/core/src/x.rs");
        assert_eq!(short_path("/a/registry/src/"), "");
    }
}
