//! Fold programs: the fold bundles of reduce and aggregate over session and
//! sliding windows (host feature "fold_programs", `Bundle.fold_bases`).
//!
//! The engine runs Kafka Streams' window algorithm (which windows a record
//! makes, updates and merges depends only on times) and sends the folds it
//! needs as data: fold value i starts from the aggregate `fold_bases[i]`
//! names, merges in its `merge_counts[i]` operands (the next refs of
//! `merge_refs`), then folds in its value (record `value_refs[i]`); its one
//! output is the result. A ref r names -1: the initializer's aggregate
//! (reduce: none); `0 <= r < A` (A = the number of aggregates, a pool here):
//! stored aggregate r; `r >= A`: the output of the earlier fold value `r - A`.
//! Every reference is decoded from its bytes, so each value owns its start.
//! A value whose call panics fails alone, and so does every value that
//! refers to its output.

use super::{column, fail_all, fail_unreadable, guarded, kind, outcomes, Folder};
use crate::pb;
use crate::serdes::Serde;

/// What is wrong with a program, every problem at once; None when nothing is.
/// `has_merge`: whether the fold can merge aggregates.
pub(super) fn problem(has_merge: bool, b: &pb::Bundle, n: usize) -> Option<String> {
    let pool = b.aggregate_lengths.len() as i64;
    let counts = &b.merge_counts;
    let mut problems = Vec::new();
    if b.value_refs.len() != n || b.fold_bases.len() != n || counts.len() != n {
        problems.push(format!(
            "{} value refs, {} fold bases and {} merge counts",
            b.value_refs.len(),
            b.fold_bases.len(),
            counts.len()
        ));
    }
    let total: i64 = b.group_sizes.iter().map(|&s| i64::from(s)).sum();
    if total != n as i64 || b.key_lengths.len() != b.group_sizes.len() || b.group_sizes.iter().any(|&s| s < 0) {
        problems.push(format!(
            "{} group sizes adding up to {total} and {} keys for {n} values",
            b.group_sizes.len(),
            b.key_lengths.len()
        ));
    }
    let records = b.value_lengths.len();
    if let Some((i, r)) =
        b.value_refs.iter().enumerate().find(|(_, &r)| usize::try_from(r).map_or(true, |r| r >= records))
    {
        problems.push(format!("fold value {i} is record {r}, one of none of the {records} records"));
    }
    let merges: i64 = counts.iter().map(|&c| i64::from(c)).sum();
    if counts.iter().any(|&c| c < 0) || merges != b.merge_refs.len() as i64 {
        problems.push(format!("merge counts adding up to {merges} for {} merge refs", b.merge_refs.len()));
    }
    let names = |r: i32, i: usize| i64::from(r) >= -1 && i64::from(r) < pool + i as i64;
    let ref_problem = |what: String, r: i32, i: usize| {
        format!("{what} {r} names neither the initializer (-1), one of the {pool} stored aggregates, nor one of the {i} earlier values")
    };
    if problems.is_empty() {
        if let Some((i, &r)) = b.fold_bases.iter().enumerate().find(|&(i, &r)| !names(r, i)) {
            problems.push(ref_problem(format!("fold value {i}'s base"), r, i));
        }
        let mut m = 0usize;
        'values: for (i, &c) in counts.iter().enumerate() {
            for &r in &b.merge_refs[m..m + c as usize] {
                if r == -1 {
                    problems.push(format!("fold value {i}'s merge operand is -1 (merge refs name aggregates)"));
                    break 'values;
                }
                if !names(r, i) {
                    problems.push(ref_problem(format!("fold value {i}'s merge operand"), r, i));
                    break 'values;
                }
            }
            m += c as usize;
        }
    }
    if !problems.is_empty() {
        return Some(format!("malformed fold program: {}", problems.join("; ")));
    }
    let st = b.steps.first()?;
    if st.subtractor_token != 0 {
        return Some(format!("step 0 ({}) is a table fold (it has a subtractor), which no fold program runs", st.node));
    }
    if !has_merge {
        if let Some(i) = counts.iter().position(|&c| c > 0) {
            return Some(if st.merger_token == 0 {
                format!("aggregate step ({}) names no merger token, and fold value {i} merges aggregates", st.node)
            } else {
                format!(
                    "aggregate step ({}) names merger token {}, but its aggregate was registered without a merger (fold value {i} merges aggregates)",
                    st.node, st.merger_token
                )
            });
        }
    }
    None
}

/// Where each earlier value's output is in the result's values column
/// (None: the value failed).
type Outputs<'a> = (&'a [Option<(usize, usize)>], &'a [u8]);

/// Why a value failed, and whether something of its (its key, value or a
/// stored aggregate) did not decode (RecordFailure.kind).
type Failure = (String, bool);

/// A checked program's columns.
struct Program<'a> {
    b: &'a pb::Bundle,
    values: Vec<Option<&'a [u8]>>,
    /// The records' metadata when the fold's functions asked for it
    /// (with_metadata): the initializer, merger and aggregator of fold
    /// value i read record `value_refs[i]`'s.
    metas: Option<Vec<crate::processor::RecordMetadata>>,
    pool: Vec<Option<&'a [u8]>>,
    serde: &'a str,
}

impl Program<'_> {
    /// The aggregate ref r names, decoded from its bytes; None: none.
    /// `outs` holds the outputs of the values before this one.
    fn resolve<F: Folder>(&self, f: &F, r: i32, outs: Outputs<'_>) -> Result<Option<F::A>, Failure> {
        if r == -1 {
            return Ok(f.initial());
        }
        let r = r as usize;
        if let Some(stored) = self.pool.get(r) {
            return match stored {
                None => Ok(None),
                Some(bytes) => F::A::decode(self.serde, Some(bytes))
                    .map(Some)
                    .map_err(|e| (format!("the stored aggregate {r} does not decode: {e}"), true)),
            };
        }
        let j = r - self.pool.len();
        match outs.0[j] {
            Some((a, z)) => F::A::decode(self.serde, Some(&outs.1[a..z]))
                .map(Some)
                .map_err(|e| (format!("the output of fold value {j} does not decode: {e}"), false)),
            None => Err((format!("depends on fold value {j}, which failed"), false)),
        }
    }

    /// Fold value i's encoded aggregate.
    fn fold<F: Folder>(
        &self,
        f: &F,
        key: &F::K,
        i: usize,
        merges: &[i32],
        outs: Outputs<'_>,
    ) -> Result<Vec<u8>, Failure> {
        let record = self.values[self.b.value_refs[i] as usize];
        let v =
            F::V::decode(&self.b.value_serde, record).map_err(|e| (format!("the value does not decode: {e}"), true))?;
        let meta = self.metas.as_ref().and_then(|m| m.get(self.b.value_refs[i] as usize));
        let a = super::metadata::with_record(meta, || {
            guarded(|| -> Result<F::A, Failure> {
                let mut acc = self.resolve(f, self.b.fold_bases[i], outs)?;
                for &r in merges {
                    let other = self.resolve(f, r, outs)?;
                    acc = match (acc, other) {
                        (Some(a), Some(o)) => Some(f.merge(key, a, o)),
                        (a, None) => a,
                        (None, o) => o,
                    };
                }
                Ok(match acc {
                    Some(a) => f.add(key, a, v),
                    None => f.start(key, v),
                })
            })
        })
        .map_err(|panic| (panic, false))??;
        let mut buf = Vec::new();
        match a.encode(self.serde, &mut buf) {
            Ok(true) => Ok(buf),
            Ok(false) => Err(("the aggregate is null; an aggregate cannot be null".to_owned(), false)),
            Err(e) => Err((format!("the aggregate does not encode: {e}"), false)),
        }
    }
}

/// Runs a fold program (a bundle with fold_bases).
pub(super) fn run<F: Folder>(f: &F, b: &pb::Bundle) -> pb::BundleResult {
    let n = outcomes(b);
    if let Some(p) = problem(f.has_merge(), b, n) {
        return fail_all(b, 0, p);
    }
    let cols = (|| {
        Ok::<_, String>((
            column(&b.values, &b.value_lengths)?,
            column(&b.keys, &b.key_lengths)?,
            column(&b.aggregates, &b.aggregate_lengths)?,
        ))
    })();
    let (values, keys, pool) = match cols {
        Ok(c) => c,
        Err(e) => return fail_unreadable(b, e),
    };
    let serde: &str = [&b.aggregate_serde, &b.output_value_serde, &b.value_serde]
        .into_iter()
        .find(|s| !s.is_empty())
        .map_or("", |s| s.as_str());
    let metas = match super::metadata::record_metas(b) {
        Ok(m) => m,
        Err(e) => return fail_unreadable(b, e),
    };
    let p = Program { b, values, metas, pool, serde };

    let mut result = pb::BundleResult { bundle_id: b.id, output_counts: vec![0; n], ..Default::default() };
    let mut outs: Vec<Option<(usize, usize)>> = Vec::with_capacity(n);
    let (mut i, mut m) = (0usize, 0usize);
    for (g, &size) in b.group_sizes.iter().enumerate() {
        let end = i + size as usize;
        let key = F::K::decode(&b.key_serde, keys[g])
            .map_err(|e| (format!("the key of this group does not decode: {e}"), true));
        for i in i..end {
            let count = b.merge_counts[i] as usize;
            let merges = &b.merge_refs[m..m + count];
            m += count;
            let out = key.as_ref().map_err(Clone::clone).and_then(|k| p.fold(f, k, i, merges, (&outs, &result.values)));
            match out {
                Ok(bytes) => {
                    let start = result.values.len();
                    result.output_counts[i] = 1;
                    result.value_lengths.push(bytes.len() as i32);
                    result.values.extend_from_slice(&bytes);
                    outs.push(Some((start, result.values.len())));
                }
                Err((message, undecodable)) => {
                    result.failures.push(pb::RecordFailure {
                        index: i as i32,
                        step: 0,
                        message,
                        kind: kind(undecodable),
                    });
                    outs.push(None);
                }
            }
        }
        i = end;
    }
    result
}
