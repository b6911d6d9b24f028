//! The GDAL utilities the `gdal` crate does not wrap: `gdal_translate`
//! (COG conversion with options), `gdalwarp` (reprojection with a
//! chosen resampling, overview picked by GDAL) and `ogr2ogr` (exports).
use std::{
    ffi::{CStr, CString, c_int, c_void},
    os::raw::c_char,
    ptr,
};

use gdal::Dataset;

use crate::RasterError;

/// Arguments as the NULL-terminated `char**` GDAL's option parsers take;
/// the `CString`s must outlive the pointers.
struct Argv {
    _strings: Vec<CString>,
    pointers: Vec<*mut c_char>,
}

impl Argv {
    fn new(args: &[String]) -> Result<Self, RasterError> {
        let strings = args
            .iter()
            .map(|a| CString::new(a.as_str()).map_err(|_| RasterError::Invalid(format!("argument {a:?} holds NUL"))))
            .collect::<Result<Vec<_>, _>>()?;
        let mut pointers: Vec<*mut c_char> = strings.iter().map(|s| s.as_ptr() as *mut c_char).collect();
        pointers.push(ptr::null_mut());
        Ok(Self {
            _strings: strings,
            pointers,
        })
    }
}

/// GDAL's last error message on this thread.
fn last_error(what: &str) -> RasterError {
    // SAFETY: CPLGetLastErrorMsg never returns null: it gives this thread's NUL-terminated error buffer (empty when
    // there is no error), copied here before any other GDAL call can change it.
    let message = unsafe { CStr::from_ptr(gdal_sys::CPLGetLastErrorMsg()) }
        .to_string_lossy()
        .trim()
        .to_string();
    if message.is_empty() {
        RasterError::Gdal(format!("{what} failed"))
    } else {
        RasterError::Gdal(message)
    }
}

/// What GDAL calls as it works: `report` is handed the share done (0 to 1)
/// and answers whether to go on.
unsafe extern "C" fn report_progress(done: f64, _message: *const c_char, report: *mut c_void) -> c_int {
    // SAFETY: GDAL hands back the pointer `translate` registered with this function: it
    // points at its local `progress` (a `&mut dyn FnMut`), which outlives the GDALTranslate call, the only
    // time GDAL calls this, and which nothing else touches meanwhile.
    let report = unsafe { &mut *(report as *mut &mut dyn FnMut(f64) -> bool) };
    c_int::from(report(done))
}

/// `gdal_translate args src dst`, telling `progress` the share done; the
/// work stops when it answers false. The file is written and closed before
/// this returns: no dataset outlives `src` that might read through to it
/// (a VRT output would).
pub fn translate(
    src: &Dataset,
    dst: &str,
    args: &[String],
    mut progress: &mut dyn FnMut(f64) -> bool,
) -> Result<(), RasterError> {
    let mut argv = Argv::new(args)?;
    let dst = CString::new(dst).map_err(|_| RasterError::Invalid("path holds NUL".into()))?;
    // SAFETY: `argv.pointers` is a NULL-terminated array of pointers into `argv`'s CStrings, which (like `dst` and
    // `progress`) outlive every call here; GDAL only reads and copies the arguments. `src` is borrowed, so its
    // handle is valid. The options, when non-null, are freed once, after GDALTranslate. A non-null result is a new
    // dataset we own, closed here, once, while `src` is still alive.
    unsafe {
        gdal_sys::CPLErrorReset();
        let options = gdal_sys::GDALTranslateOptionsNew(argv.pointers.as_mut_ptr(), ptr::null_mut());
        if options.is_null() {
            return Err(last_error("translate options"));
        }
        gdal_sys::GDALTranslateOptionsSetProgress(
            options,
            Some(report_progress),
            (&mut progress as *mut &mut dyn FnMut(f64) -> bool).cast::<c_void>(),
        );
        let mut usage_error = 0;
        let out = gdal_sys::GDALTranslate(dst.as_ptr(), src.c_dataset(), options, &mut usage_error);
        gdal_sys::GDALTranslateOptionsFree(options);
        if out.is_null() {
            return Err(last_error("translate"));
        }
        gdal_sys::GDALClose(out);
        Ok(())
    }
}

/// `gdalwarp args src` into an in-memory dataset, which holds its own
/// pixels and so may outlive `src`: the output format is this function's
/// (`-of MEM`), never the caller's, who could ask for one that reads
/// through to `src` (VRT).
pub fn warp(src: &Dataset, args: &[String]) -> Result<Dataset, RasterError> {
    if args.iter().any(|a| a == "-of" || a == "-f") {
        return Err(RasterError::Invalid(
            "warp writes MEM; the output format is not an argument".into(),
        ));
    }
    let args: Vec<String> = ["-of", "MEM"]
        .map(String::from)
        .into_iter()
        .chain(args.iter().cloned())
        .collect();
    let mut argv = Argv::new(&args)?;
    let dst = CString::default();
    // SAFETY: as in `translate` for `argv` and the options; `sources` holds `src`'s valid handle, which GDALWarp
    // only reads, and `dst` is an empty C string alive for the call. A non-null result is a new dataset we own
    // (`-of MEM`, set above: in memory, holding its own pixels); `from_c_dataset` takes it, to close once.
    unsafe {
        gdal_sys::CPLErrorReset();
        let options = gdal_sys::GDALWarpAppOptionsNew(argv.pointers.as_mut_ptr(), ptr::null_mut());
        if options.is_null() {
            return Err(last_error("warp options"));
        }
        let mut sources = [src.c_dataset()];
        let mut usage_error = 0;
        let out = gdal_sys::GDALWarp(
            dst.as_ptr(),
            ptr::null_mut(),
            1,
            sources.as_mut_ptr(),
            options,
            &mut usage_error,
        );
        gdal_sys::GDALWarpAppOptionsFree(options);
        if out.is_null() {
            return Err(last_error("warp"));
        }
        Ok(Dataset::from_c_dataset(out))
    }
}
