//! `catch_quiet` keeps the panic hook silent for the panics it catches and
//! only for those (a process of its own: the hook is the process's).

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::cell::Cell;

use dataformats_core::panics::catch_quiet;

thread_local! {
    static SEEN: Cell<u32> = const { Cell::new(0) };
}

#[test]
fn caught_panics_are_silent_and_others_are_not() {
    // A hook that counts this thread's panics, set before the first call.
    std::panic::set_hook(Box::new(|_| SEEN.with(|s| s.set(s.get() + 1))));
    let e = catch_quiet(|| panic!("bad length {}", 7)).unwrap_err();
    assert!(e.starts_with("bad length 7, at "), "{e}");
    assert!(e.contains("quiet_panics.rs"), "{e}");
    assert_eq!(catch_quiet(|| 5), Ok(5));
    let e = catch_quiet(|| std::panic::panic_any(3u8)).unwrap_err();
    assert!(e.starts_with("a panic without a message"), "{e}");
    // Nested: the inner one caught, the outer goes on quietly.
    let r = catch_quiet(|| catch_quiet(|| panic!("inner")).unwrap_err());
    assert!(r.unwrap().starts_with("inner"));
    assert_eq!(SEEN.with(Cell::get), 0, "no caught panic reached the hook");
    // Outside: the previous hook sees it.
    assert!(std::panic::catch_unwind(|| panic!("loud")).is_err());
    assert_eq!(SEEN.with(Cell::get), 1);
    // Another thread's panic while this one is quiet is not silenced.
    let loud = catch_quiet(|| {
        let h = std::thread::spawn(|| {
            let _ = std::panic::catch_unwind(|| panic!("elsewhere"));
            SEEN.with(Cell::get)
        });
        h.join().unwrap()
    });
    assert_eq!(loud, Ok(1));
}
