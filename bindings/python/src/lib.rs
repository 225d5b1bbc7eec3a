//! Python bindings of bale: the `bale._bale` extension module.

use pyo3::prelude::*;

#[pymodule]
fn _bale(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FORMAT_VERSION", bale::btree::FORMAT_VERSION)?;
    Ok(())
}
