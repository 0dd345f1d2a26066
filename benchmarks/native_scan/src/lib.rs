//! A measurement prototype (hibase issue 16): the filtered full scan with RocksDB iterated,
//! segments decoded and predicates evaluated in native code, no Python per row. It opens the
//! embedded store's folder read-only, walks one table family's column family in key order,
//! takes each row's newest PUT cells, evaluates a condition in DNF and returns the projected
//! cells of the matching rows. Only what the benchmark's rows need is handled: rows whose
//! segments are all PUTs (any other segment kind makes the scan fail loudly, never answer).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rocksdb::{Options, DB};

enum Op {
    IntEq(i64),
    IntLt(i64),
    IntGt(i64),
    BytesEq(Vec<u8>),
    Prefix(Vec<u8>),
}

struct Atom {
    col: usize, // index into the wanted column list
    op: Op,
}

fn read_bin<'a>(buf: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let tag = *buf.get(*pos)?;
    let (len, head) = match tag {
        0xc4 => (*buf.get(*pos + 1)? as usize, 2),
        0xc5 => (u16::from_be_bytes(buf.get(*pos + 1..*pos + 3)?.try_into().ok()?) as usize, 3),
        0xc6 => (u32::from_be_bytes(buf.get(*pos + 1..*pos + 5)?.try_into().ok()?) as usize, 5),
        0xa0..=0xbf => ((tag & 0x1f) as usize, 1), // fixstr (raw strings) as bytes
        0xd9 => (*buf.get(*pos + 1)? as usize, 2),
        _ => return None,
    };
    let start = *pos + head;
    let end = start + len;
    *pos = end;
    buf.get(start..end)
}

fn read_array_len(buf: &[u8], pos: &mut usize) -> Option<usize> {
    let tag = *buf.get(*pos)?;
    match tag {
        0x90..=0x9f => {
            *pos += 1;
            Some((tag & 0x0f) as usize)
        }
        0xdc => {
            let n = u16::from_be_bytes(buf.get(*pos + 1..*pos + 3)?.try_into().ok()?) as usize;
            *pos += 3;
            Some(n)
        }
        _ => None,
    }
}

fn skip_uint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let tag = *buf.get(*pos)?;
    let (v, n) = match tag {
        0x00..=0x7f => (tag as u64, 1),
        0xcc => (*buf.get(*pos + 1)? as u64, 2),
        0xcd => (u16::from_be_bytes(buf.get(*pos + 1..*pos + 3)?.try_into().ok()?) as u64, 3),
        0xce => (u32::from_be_bytes(buf.get(*pos + 1..*pos + 5)?.try_into().ok()?) as u64, 5),
        0xcf => (u64::from_be_bytes(buf.get(*pos + 1..*pos + 9)?.try_into().ok()?), 9),
        _ => return None,
    };
    *pos += n;
    Some(v)
}

fn parse_int(raw: &[u8]) -> Option<i64> {
    std::str::from_utf8(raw).ok()?.trim().parse::<i64>().ok()
}

/// The newest PUT value of each wanted column of one row (segments newest first), or Err
/// when a segment is not a PUT (a delete or a folded row: not handled by the prototype).
fn merge<'a>(segs: &[&'a [u8]], wanted: &[Vec<u8>], out: &mut Vec<Option<&'a [u8]>>) -> Result<(), String> {
    out.clear();
    out.resize(wanted.len(), None);
    let mut best_ts: Vec<u64> = vec![0; wanted.len()];
    for seg in segs {
        let mut pos = 0;
        let bad = || format!("segment not understood by the prototype: {:?}", &seg[..seg.len().min(16)]);
        let n = read_array_len(seg, &mut pos).ok_or_else(bad)?;
        let kind = skip_uint(seg, &mut pos).ok_or_else(bad)?;
        if n != 4 || kind != 0 {
            return Err(bad());
        }
        let ts = skip_uint(seg, &mut pos).ok_or_else(bad)?;
        let nq = read_array_len(seg, &mut pos).ok_or_else(bad)?;
        let mut slots: Vec<Option<usize>> = Vec::with_capacity(nq);
        for _ in 0..nq {
            let q = read_bin(seg, &mut pos).ok_or_else(bad)?;
            slots.push(wanted.iter().position(|w| w.as_slice() == q));
        }
        let nv = read_array_len(seg, &mut pos).ok_or_else(bad)?;
        if nv != nq {
            return Err(bad());
        }
        for slot in slots {
            let v = read_bin(seg, &mut pos).ok_or_else(bad)?;
            if let Some(i) = slot {
                // newer segments come first: keep the first value unless a later segment
                // carries a strictly newer timestamp (HBase: the newest version wins)
                if out[i].is_none() || ts > best_ts[i] {
                    out[i] = Some(v);
                    best_ts[i] = ts;
                }
            }
        }
    }
    Ok(())
}

fn holds(atom: &Atom, cells: &[Option<&[u8]>]) -> bool {
    let Some(raw) = cells[atom.col] else { return false };
    match &atom.op {
        Op::IntEq(x) => parse_int(raw) == Some(*x),
        Op::IntLt(x) => parse_int(raw).map_or(false, |v| v < *x),
        Op::IntGt(x) => parse_int(raw).map_or(false, |v| v > *x),
        Op::BytesEq(b) => raw == b.as_slice(),
        Op::Prefix(p) => raw.starts_with(p),
    }
}

fn row_of_prefix(prefix: &[u8]) -> Vec<u8> {
    // strip the 0x00 0x01 terminator, unescape 0x00 0xff
    let body = &prefix[..prefix.len() - 2];
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        out.push(body[i]);
        i += if body[i] == 0 { 2 } else { 1 };
    }
    out
}

/// scan(path, cf, dnf, projection) -> (rows visited, [(rowkey, [value or None])])
/// dnf: [[(column, op, value)]], op one of "int=", "int<", "int>", "=", "prefix".
#[pyfunction]
fn scan(py: Python<'_>, path: &str, cf: &str, dnf: Vec<Vec<(Vec<u8>, String, PyObject)>>,
        projection: Vec<Vec<u8>>) -> PyResult<(usize, Vec<(Py<PyBytes>, Vec<Option<Py<PyBytes>>>)>)> {
    let mut wanted: Vec<Vec<u8>> = projection.clone();
    let mut conjuncts: Vec<Vec<Atom>> = Vec::new();
    for conj in &dnf {
        let mut atoms = Vec::new();
        for (col, op, value) in conj {
            let idx = match wanted.iter().position(|w| w == col) {
                Some(i) => i,
                None => {
                    wanted.push(col.clone());
                    wanted.len() - 1
                }
            };
            let op = match op.as_str() {
                "int=" => Op::IntEq(value.extract(py)?),
                "int<" => Op::IntLt(value.extract(py)?),
                "int>" => Op::IntGt(value.extract(py)?),
                "=" => Op::BytesEq(value.extract(py)?),
                "prefix" => Op::Prefix(value.extract(py)?),
                other => return Err(PyValueError::new_err(format!("unknown op {other}"))),
            };
            atoms.push(Atom { col: idx, op });
        }
        conjuncts.push(atoms);
    }
    let nproj = projection.len();
    let result: Result<(usize, Vec<(Vec<u8>, Vec<Option<Vec<u8>>>)>), String> = py.allow_threads(|| {
        let opts = Options::default();
        let cfs = DB::list_cf(&opts, path).map_err(|e| e.to_string())?;
        let db = DB::open_cf_for_read_only(&opts, path, &cfs, false).map_err(|e| e.to_string())?;
        let handle = db.cf_handle(cf).ok_or_else(|| format!("no column family {cf}"))?;
        let mut it = db.raw_iterator_cf(&handle);
        it.seek_to_first();
        let mut visited = 0usize;
        let mut found = Vec::new();
        let mut segs: Vec<Vec<u8>> = Vec::new();
        let mut cur: Vec<u8> = Vec::new();
        let flush = |cur: &[u8], segs: &Vec<Vec<u8>>, found: &mut Vec<(Vec<u8>, Vec<Option<Vec<u8>>>)>| -> Result<(), String> {
            let refs: Vec<&[u8]> = segs.iter().map(|s| s.as_slice()).collect();
            let mut cells: Vec<Option<&[u8]>> = Vec::new();
            merge(&refs, &wanted, &mut cells)?;
            if conjuncts.iter().any(|c| c.iter().all(|a| holds(a, &cells))) {
                found.push((row_of_prefix(cur), cells[..nproj].iter().map(|c| c.map(|v| v.to_vec())).collect()));
            }
            Ok(())
        };
        while it.valid() {
            let key = it.key().unwrap();
            let prefix = &key[..key.len() - 8];
            if prefix != cur.as_slice() {
                if !segs.is_empty() {
                    visited += 1;
                    flush(&cur, &segs, &mut found)?;
                    segs.clear();
                }
                cur.clear();
                cur.extend_from_slice(prefix);
            }
            segs.push(it.value().unwrap().to_vec());
            it.next();
        }
        it.status().map_err(|e| e.to_string())?;
        if !segs.is_empty() {
            visited += 1;
            flush(&cur, &segs, &mut found)?;
        }
        Ok((visited, found))
    });
    let (visited, found) = result.map_err(PyValueError::new_err)?;
    let rows = found
        .into_iter()
        .map(|(k, vs)| (PyBytes::new_bound(py, &k).unbind(),
                        vs.into_iter().map(|v| v.map(|b| PyBytes::new_bound(py, &b).unbind())).collect()))
        .collect();
    Ok((visited, rows))
}

/// count_raw(path, cf) -> (entries, value bytes, seconds opening, seconds iterating): RocksDB's
/// own iteration cost, nothing decoded (what any core reading the store pays at least).
#[pyfunction]
fn count_raw(py: Python<'_>, path: &str, cf: &str) -> PyResult<(usize, usize, f64, f64)> {
    py.allow_threads(|| {
        let t0 = std::time::Instant::now();
        let opts = Options::default();
        let cfs = DB::list_cf(&opts, path).map_err(|e| e.to_string())?;
        let db = DB::open_cf_for_read_only(&opts, path, &cfs, false).map_err(|e| e.to_string())?;
        let handle = db.cf_handle(cf).ok_or_else(|| format!("no column family {cf}"))?;
        let opened = t0.elapsed().as_secs_f64();
        let t1 = std::time::Instant::now();
        let mut it = db.raw_iterator_cf(&handle);
        it.seek_to_first();
        let (mut n, mut bytes) = (0usize, 0usize);
        while it.valid() {
            bytes += it.value().map_or(0, |v| v.len());
            n += 1;
            it.next();
        }
        it.status().map_err(|e| e.to_string())?;
        Ok((n, bytes, opened, t1.elapsed().as_secs_f64()))
    })
    .map_err(|e: String| PyValueError::new_err(e))
}

/// All newest PUT cells of one row's segments (newest first): [(qualifier, value)].
fn merge_all<'a>(segs: &[&'a [u8]]) -> Result<Vec<(&'a [u8], &'a [u8], u64)>, String> {
    let mut out: Vec<(&[u8], &[u8], u64)> = Vec::new();
    for seg in segs {
        let mut pos = 0;
        let bad = || "segment not understood by the prototype".to_string();
        let n = read_array_len(seg, &mut pos).ok_or_else(bad)?;
        let kind = skip_uint(seg, &mut pos).ok_or_else(bad)?;
        if n != 4 || kind != 0 {
            return Err(bad());
        }
        let ts = skip_uint(seg, &mut pos).ok_or_else(bad)?;
        let nq = read_array_len(seg, &mut pos).ok_or_else(bad)?;
        let mut quals = Vec::with_capacity(nq);
        for _ in 0..nq {
            quals.push(read_bin(seg, &mut pos).ok_or_else(bad)?);
        }
        read_array_len(seg, &mut pos).ok_or_else(bad)?;
        for q in quals {
            let v = read_bin(seg, &mut pos).ok_or_else(bad)?;
            match out.iter_mut().find(|(oq, _, _)| *oq == q) {
                Some(cell) if ts > cell.2 => *cell = (q, v, ts),
                Some(_) => {}
                None => out.push((q, v, ts)),
            }
        }
    }
    Ok(out)
}

/// Each row's newest PUT cells as (rowkey, {qualifier: value}), rows that exist only, read in
/// the given order through one iterator (a seek per row).
fn read_rows(py: Python<'_>, it: &mut rocksdb::DBRawIteratorWithThreadMode<'_, DB>,
             rows: &[Vec<u8>]) -> PyResult<Vec<(Py<PyBytes>, Py<PyDict>)>> {
    let mut out = Vec::with_capacity(rows.len());
    let mut prefix: Vec<u8> = Vec::new();
    let mut segs: Vec<Vec<u8>> = Vec::new();
    for row in rows {
        prefix.clear();
        for &b in row {
            prefix.push(b);
            if b == 0 {
                prefix.push(0xff);
            }
        }
        prefix.extend_from_slice(&[0, 1]);
        segs.clear();
        it.seek(&prefix);
        while it.valid() && it.key().unwrap().starts_with(&prefix) {
            segs.push(it.value().unwrap().to_vec());
            it.next();
        }
        if segs.is_empty() {
            continue;
        }
        let refs: Vec<&[u8]> = segs.iter().map(|s| s.as_slice()).collect();
        let cells = merge_all(&refs).map_err(PyValueError::new_err)?;
        let d = PyDict::new_bound(py);
        for (q, v, _) in cells {
            d.set_item(PyBytes::new_bound(py, q), PyBytes::new_bound(py, v))?;
        }
        out.push((PyBytes::new_bound(py, row).unbind(), d.unbind()));
    }
    it.status().map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(out)
}

/// fetch(path, cf, rowkeys) -> [(rowkey, {qualifier: value})] of the rows that exist, read in
/// the given order with one iterator (a seek per row): the big-index-result fetch, natively.
#[pyfunction]
fn fetch(py: Python<'_>, path: &str, cf: &str, rows: Vec<Vec<u8>>) -> PyResult<Vec<(Py<PyBytes>, Py<PyDict>)>> {
    let opts = Options::default();
    let cfs = DB::list_cf(&opts, path).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let db = DB::open_cf_for_read_only(&opts, path, &cfs, false)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let handle = db.cf_handle(cf).ok_or_else(|| PyValueError::new_err("no such column family"))?;
    let mut it = db.raw_iterator_cf(&handle);
    read_rows(py, &mut it, &rows)
}

/// The store opened once (read-only), for per-query measurements where opening would dominate.
#[pyclass]
struct Store {
    db: DB,
}

#[pymethods]
impl Store {
    #[new]
    fn new(path: &str) -> PyResult<Self> {
        let opts = Options::default();
        let cfs = DB::list_cf(&opts, path).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let db = DB::open_cf_for_read_only(&opts, path, &cfs, false)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(Store { db })
    }

    /// lookup(index_cf, value_prefix, data_cf) -> [(rowkey, {qualifier: value})]: an equality
    /// lookup end to end, natively: the index entries under the value's key prefix (entry key =
    /// value key + rowkey), then each row's segments (a seek per row) merged.
    fn lookup(&self, py: Python<'_>, index_cf: &str, value_prefix: &[u8], data_cf: &str)
              -> PyResult<Vec<(Py<PyBytes>, Py<PyDict>)>> {
        let err = |e: String| PyValueError::new_err(e);
        let icf = self.db.cf_handle(index_cf).ok_or_else(|| err(format!("no {index_cf}")))?;
        let dcf = self.db.cf_handle(data_cf).ok_or_else(|| err(format!("no {data_cf}")))?;
        let mut rows: Vec<Vec<u8>> = Vec::new();
        let mut it = self.db.raw_iterator_cf(&icf);
        it.seek(value_prefix);
        while it.valid() {
            let key = it.key().unwrap();
            if !key.starts_with(value_prefix) {
                break;
            }
            rows.push(key[value_prefix.len()..].to_vec());
            it.next();
        }
        it.status().map_err(|e| err(e.to_string()))?;
        let mut dit = self.db.raw_iterator_cf(&dcf);
        read_rows(py, &mut dit, &rows)
    }
}

#[pymodule]
fn native_scan(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Store>()?;
    m.add_function(wrap_pyfunction!(fetch, m)?)?;
    m.add_function(wrap_pyfunction!(scan, m)?)?;
    m.add_function(wrap_pyfunction!(count_raw, m)?)?;
    Ok(())
}
