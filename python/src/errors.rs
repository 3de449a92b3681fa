//! ember's errors as Python exceptions: the built-in kind an error's cause
//! calls for, with the one-line message the `ember` CLI prints.

use std::any::Any;
use std::io::ErrorKind;

use pyo3::exceptions::{
    PyException, PyFileNotFoundError, PyIsADirectoryError, PyOSError, PyPermissionError,
    PyValueError,
};
use pyo3::{create_exception, PyErr, Python};

create_exception!(
    _ember,
    EmberError,
    PyException,
    "A run of ember failed for a reason no built-in exception names (a \
     panic in a job, an internal error). Missing files, folders given as \
     files and malformed input raise FileNotFoundError, IsADirectoryError, \
     PermissionError and ValueError instead."
);

/// An error and its causes on one line, each cause once (as `ember`
/// prints it, after `ember: `).
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

/// The Python exception for an error of a run. A Python exception raised
/// by user code (a custom job's `map`, a file object's `read`) comes back
/// as itself.
pub(crate) fn to_py(e: anyhow::Error) -> PyErr {
    let e = match e.downcast::<PyErr>() {
        Ok(py) => return py,
        Err(e) => e,
    };
    let io = e.chain().find_map(|c| c.downcast_ref::<std::io::Error>());
    // A file object's exception, carried by the read error that ended the
    // run: raised as itself.
    if let Some(raised) = io.and_then(|io| io.get_ref()?.downcast_ref::<PyErr>()) {
        return Python::attach(|py| raised.clone_ref(py));
    }
    let msg = one_line(&e);
    if let Some(io) = io {
        return match io.kind() {
            ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
            ErrorKind::PermissionDenied => PyPermissionError::new_err(msg),
            ErrorKind::IsADirectory => PyIsADirectoryError::new_err(msg),
            _ => PyOSError::new_err(msg),
        };
    }
    match e.chain().find_map(|c| c.downcast_ref::<ember::Error>()) {
        Some(ember::Error::IsDirectory { .. }) => PyIsADirectoryError::new_err(msg),
        Some(
            ember::Error::Malformed { .. }
            | ember::Error::InvalidInput(_)
            | ember::Error::Config(_),
        ) => PyValueError::new_err(msg),
        _ => EmberError::new_err(msg),
    }
}

/// The exception for a panic caught on the calling thread (a bug in ember
/// or in this module: the interpreter goes on).
pub(crate) fn panicked(payload: Box<dyn Any + Send>) -> PyErr {
    let what = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    };
    EmberError::new_err(format!("internal error: {what}"))
}
