//! GDAL's own messages, caught on the thread that reads a file instead of
//! going to the worker's stderr: a file that cannot be read is explained
//! with the message that says where (`At line 4, character 76:
//! Unterminated string`), not with the generic one the call returns
//! (`returned a NULL pointer`).
use std::{
    cell::RefCell,
    ffi::{CStr, c_char, c_int},
};

use gdal_sys::CPLErr;

thread_local! {
    static CAUGHT: RefCell<Vec<Message>> = const { RefCell::new(Vec::new()) };
    static DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[derive(Clone, Debug)]
pub struct Message {
    pub failure: bool,
    pub text: String,
}

unsafe extern "C" fn catch(class: CPLErr::Type, _number: c_int, text: *const c_char) {
    if text.is_null() {
        return;
    }
    // SAFETY: GDAL hands a handler a NUL-terminated message valid for the call (null checked above); it is copied
    // at once.
    let text = unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned();
    let failure = class == CPLErr::CE_Failure || class == CPLErr::CE_Fatal;
    CAUGHT.with(|caught| {
        let mut caught = caught.borrow_mut();
        // A broken file can warn once per feature: the first ones say enough.
        if caught.len() < 100 {
            caught.push(Message { failure, text });
        }
    });
}

/// Catches GDAL's messages on this thread while it lives (GDAL keeps a
/// stack of handlers per thread); one started inside another shares its
/// messages.
pub struct Caught {
    /// Not `Send`: the handler belongs to the thread that pushed it.
    _thread: std::marker::PhantomData<*const ()>,
}

impl Caught {
    pub fn start() -> Self {
        if DEPTH.replace(DEPTH.get() + 1) == 0 {
            CAUGHT.with(|caught| caught.borrow_mut().clear());
        }
        // SAFETY: `catch` is a plain function that lives for the program; the handler is popped on drop, on this
        // same thread (`Caught` is not Send).
        unsafe { gdal_sys::CPLPushErrorHandler(Some(catch)) };
        Self {
            _thread: std::marker::PhantomData,
        }
    }

    /// How many messages were caught so far.
    pub fn count(&self) -> usize {
        CAUGHT.with(|caught| caught.borrow().len())
    }

    /// The first failure caught after the first `since` messages.
    pub fn failure_since(&self, since: usize) -> Option<String> {
        CAUGHT.with(|caught| {
            caught
                .borrow()
                .iter()
                .skip(since)
                .find(|m| m.failure)
                .map(|m| m.text.clone())
        })
    }
}

impl Drop for Caught {
    fn drop(&mut self) {
        // SAFETY: pops the handler `start` pushed on this thread.
        unsafe { gdal_sys::CPLPopErrorHandler() };
        DEPTH.set(DEPTH.get() - 1);
    }
}
