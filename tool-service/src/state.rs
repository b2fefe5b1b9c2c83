//! Values that handlers share: database pools, HTTP clients, settings. Built
//! once (usually in the start-up hook, see `App::setup`), handed to the
//! registry, and borrowed by every request of every service that asks for
//! its type with `#[state]`.

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;

/// Shared values, one per type.
///
/// ```
/// use std::sync::Arc;
/// use tool_service::State;
///
/// struct Db { url: String }
/// struct Limits { max_hits: usize }
///
/// let state = State::new()
///     .with(Db { url: "sqlite://rag.db".into() })
///     .with(Limits { max_hits: 5 });
/// let db: Arc<Db> = state.get().unwrap();
/// assert_eq!(db.url, "sqlite://rag.db");
/// assert!(state.get::<String>().is_none());
/// assert_eq!(state.type_names().len(), 2);
/// ```
///
/// Cloning is cheap: clones share the values. A value is dropped when the
/// last clone of the state and the last `Arc` taken from it are gone; values
/// are dropped in the reverse order of insertion, so one built from another
/// (a cache over a pool) goes first.
///
// The guide below links other guides as files (for GitHub and a
// checkout). A label's first definition wins, so these, read first, send
// its labels to the items and sections of the rustdoc pages instead.
/// [testing-guide]: crate::Registry#testing-your-tools
/// [run]: macro@crate::run
///
#[cfg_attr(feature = "cli", doc = include_str!("../docs/state.md"))]
#[derive(Clone, Default)]
pub struct State {
    /// `None` while empty: an empty state costs nothing to clone, which
    /// every request of a service without `#[state]` does.
    values: Option<Arc<Values>>,
}

#[derive(Clone, Default)]
struct Values(Vec<Entry>);

#[derive(Clone)]
struct Entry {
    type_id: TypeId,
    type_name: &'static str,
    value: Arc<dyn Any + Send + Sync>,
}

impl Drop for Values {
    fn drop(&mut self) {
        while self.0.pop().is_some() {}
    }
}

impl State {
    /// No values.
    pub fn new() -> Self {
        Self::default()
    }

    /// A shared empty state, for calls that were given none.
    pub(crate) fn empty() -> &'static State {
        static EMPTY: State = State { values: None };
        &EMPTY
    }

    /// This state with `value` added, replacing a value of the same type.
    #[must_use]
    pub fn with<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.insert(value);
        self
    }

    /// Adds `value`, replacing a value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        let entry = Entry {
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
            value: Arc::new(value),
        };
        let values = &mut Arc::make_mut(self.values.get_or_insert_with(Arc::default)).0;
        match values.iter_mut().find(|old| old.type_id == entry.type_id) {
            Some(old) => *old = entry,
            None => values.push(entry),
        }
    }

    /// The value of type `T`, if there is one.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.get_by_id(TypeId::of::<T>())
            .and_then(|value| Arc::clone(value).downcast::<T>().ok())
    }

    /// Whether there is a value of the type with this id.
    pub fn contains(&self, type_id: TypeId) -> bool {
        self.get_by_id(type_id).is_some()
    }

    /// The type names of the values, in the order they were added.
    pub fn type_names(&self) -> Vec<&'static str> {
        self.entries().iter().map(|entry| entry.type_name).collect()
    }

    fn entries(&self) -> &[Entry] {
        self.values.as_deref().map_or(&[], |values| &values.0)
    }

    fn get_by_id(&self, type_id: TypeId) -> Option<&Arc<dyn Any + Send + Sync>> {
        self.entries()
            .iter()
            .find(|entry| entry.type_id == type_id)
            .map(|entry| &entry.value)
    }
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.type_names()).finish()
    }
}

/// A state type a service needs, as `#[state]` declares it.
// Not public API: filled in by generated code.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct StateNeed {
    pub type_id: fn() -> TypeId,
    pub type_name: fn() -> &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn values_are_replaced_by_type_and_shared_by_clones() {
        let state = State::new().with(1u8).with(String::from("a")).with(2u8);
        assert_eq!(*state.get::<u8>().unwrap(), 2);
        assert_eq!(state.type_names(), ["u8", "alloc::string::String"]);
        let clone = state.clone();
        assert!(Arc::ptr_eq(
            &state.get::<String>().unwrap(),
            &clone.get::<String>().unwrap()
        ));
        assert!(state.contains(TypeId::of::<String>()));
        assert!(!state.contains(TypeId::of::<u16>()));
    }

    static DROPS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

    struct Noisy(&'static str);

    impl Drop for Noisy {
        fn drop(&mut self) {
            DROPS.lock().unwrap().push(self.0);
        }
    }

    struct Pool(#[allow(dead_code)] Noisy);
    struct Cache(#[allow(dead_code)] Noisy);

    #[test]
    fn values_drop_in_reverse_order_of_insertion_after_the_last_user() {
        let state = State::new()
            .with(Pool(Noisy("pool")))
            .with(Cache(Noisy("cache")));
        let in_flight = state.get::<Pool>().unwrap();
        drop(state);
        assert_eq!(*DROPS.lock().unwrap(), ["cache"]);
        drop(in_flight);
        assert_eq!(*DROPS.lock().unwrap(), ["cache", "pool"]);
    }
}
