//! Collects every error of one expansion, so all are reported at once, and
//! writes the lists of names the messages offer.

use std::fmt::Display;

use quote::ToTokens;

/// Errors found so far, each on its own token.
#[derive(Default)]
pub(crate) struct Errors {
    combined: Option<syn::Error>,
}

impl Errors {
    /// Records an error spanning `tokens`.
    pub(crate) fn spanned<T: ToTokens, M: Display>(&mut self, tokens: T, message: M) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Records an error at `span`.
    pub(crate) fn at<M: Display>(&mut self, span: proc_macro2::Span, message: M) {
        self.push(syn::Error::new(span, message));
    }

    /// Records an error.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.combined {
            Some(combined) => combined.combine(error),
            None => self.combined = Some(error),
        }
    }

    /// `Ok` when nothing was recorded.
    pub(crate) fn finish(self) -> syn::Result<()> {
        match self.combined {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// The messages recorded, in order: what the checks' unit tests assert.
    #[cfg(test)]
    pub(crate) fn messages(self) -> Vec<String> {
        self.combined
            .into_iter()
            .flatten()
            .map(|error| error.to_string())
            .collect()
    }
}

/// Names as an error message lists them: "`topic`, `id`, `tool`".
pub(crate) fn code_list<T: Display>(names: impl IntoIterator<Item = T>) -> String {
    names
        .into_iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "; did you mean `topic`?" when one of `candidates` is a near miss of
/// `name` (a typo, a swapped pair of letters, `-` for `_`), else nothing.
/// Messages append it to their "expected one of …" list.
pub(crate) fn did_you_mean<T: AsRef<str>>(
    name: &str,
    candidates: impl IntoIterator<Item = T>,
) -> String {
    match nearest(name, candidates) {
        Some(candidate) => format!("; did you mean `{candidate}`?"),
        None => String::new(),
    }
}

/// The candidate closest to `name`, if it is close enough to be what was
/// meant: at most one edit (letter case aside) for names of up to five
/// characters, two for longer ones. The first of equally close candidates
/// wins.
pub(crate) fn nearest<T: AsRef<str>>(
    name: &str,
    candidates: impl IntoIterator<Item = T>,
) -> Option<String> {
    let lower = name.to_lowercase();
    candidates
        .into_iter()
        .filter_map(|candidate| {
            let candidate = candidate.as_ref();
            let distance = edit_distance(&lower, &candidate.to_lowercase());
            let longest = name.chars().count().max(candidate.chars().count());
            let allowed = (longest / 3).clamp(1, 2);
            (candidate != name && distance <= allowed).then(|| (distance, candidate.to_owned()))
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Edits (insert, delete, replace, or swap two neighbours) that turn `a`
/// into `b`: the optimal string alignment distance.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // rows[i][j]: the distance between a[..i] and b[..j].
    let mut rows = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let replace = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + replace);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_are_counted() {
        assert_eq!(edit_distance("topic", "topic"), 0);
        assert_eq!(edit_distance("topc", "topic"), 1);
        assert_eq!(edit_distance("stlye", "style"), 1);
        assert_eq!(edit_distance("request-queue", "request_queue"), 1);
        assert_eq!(edit_distance("", "id"), 2);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn near_misses_are_suggested() {
        let keys = ["topic", "id", "request_queue", "response_queue", "timeout"];
        assert_eq!(nearest("topc", keys).as_deref(), Some("topic"));
        assert_eq!(nearest("Topic", keys).as_deref(), Some("topic"));
        assert_eq!(
            nearest("request-queue", keys).as_deref(),
            Some("request_queue")
        );
        assert_eq!(
            nearest("respons_queu", keys).as_deref(),
            Some("response_queue")
        );
        assert_eq!(nearest("timout", keys).as_deref(), Some("timeout"));
        assert_eq!(nearest("ip", keys).as_deref(), Some("id"));
        assert_eq!(
            did_you_mean("concurency", ["concurrency"]),
            "; did you mean `concurrency`?"
        );
    }

    #[test]
    fn far_misses_and_exact_names_are_not() {
        let keys = ["topic", "id", "tool", "crate"];
        assert_eq!(nearest("queue", keys), None);
        assert_eq!(nearest("colour", keys), None);
        assert_eq!(nearest("xy", keys), None);
        assert_eq!(nearest("topic", keys), None);
        assert_eq!(did_you_mean("colour", keys), "");
    }
}
