//! Calls of user functions, whose panics are caught and reported as the
//! failure of their record (with the panic's message and location, not
//! printed), and the columns bundles carry.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

// Panics in user functions: caught, with the message and location the panic
// hook saw, and not printed (the engine reports the failed record).

thread_local! {
    static IN_USER_FN: Cell<bool> = const { Cell::new(false) };
    static PANIC_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_USER_FN.with(|f| f.get()) {
                PANIC_AT.with(|p| *p.borrow_mut() = info.location().map(|l| l.to_string()));
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs a user function, turning a panic into its message:
/// `panicked at src/main.rs:10:5: <message>`.
pub(crate) fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    install_hook();
    let was = IN_USER_FN.with(|c| c.replace(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    IN_USER_FN.with(|c| c.set(was));
    r.map_err(|payload| {
        let msg = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_owned()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "a panic with a non-text payload".to_owned()
        };
        match PANIC_AT.with(|p| p.borrow_mut().take()) {
            Some(at) => format!("panicked at {at}: {msg}"),
            None => format!("panicked: {msg}"),
        }
    })
}

/// Splits a column: record j is data[sum(lengths[..j])..][..lengths[j]], None for -1.
pub(crate) fn column<'a>(data: &'a [u8], lengths: &[i32]) -> Result<Vec<Option<&'a [u8]>>, String> {
    let mut out = Vec::with_capacity(lengths.len());
    let mut pos = 0usize;
    for &n in lengths {
        if n < 0 {
            if n != -1 {
                return Err(format!("malformed bundle column: length {n}"));
            }
            out.push(None);
            continue;
        }
        let end = pos + n as usize;
        if end > data.len() {
            return Err(format!("malformed bundle column: lengths account for more than its {} bytes", data.len()));
        }
        out.push(Some(&data[pos..end]));
        pos = end;
    }
    if pos != data.len() {
        return Err(format!(
            "malformed bundle column: lengths account for {pos} bytes, the column holds {}",
            data.len()
        ));
    }
    Ok(out)
}
