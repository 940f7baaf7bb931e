//! The bee cache and collector.
//!
//! - **Relation bees** (deform and form) are kept per relation id until the relation
//!   is dropped or its layout changes ([`BeeCache::retire_relations`]); a relation
//!   whose bees were instantiated while it was small is re-made compiled once the
//!   policy says it is worth it.
//! - **Query bees** (scan) belong to a prepared statement (which holds them and frees
//!   them when it is dropped) or, for one-off queries, to a small LRU keyed by spec so
//!   that re-running the same query reuses its bee.
//! - **Code memory** is accounted per bee and bounded by `code_limit`: making a
//!   compiled bee first evicts least recently used query bees from the LRU; if that
//!   does not make room the bee is instantiated instead. A bee's code is freed when
//!   its last holder (cache, statement, running scan) lets go of it.
//!
//! Every bee made is registered (weakly) so that [`BeeCache::rows`] can list the live
//! ones for the `beedb_bees` view.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;

use crate::agg::{AggBee, AggSpec};
use crate::bee::{BeeInfo, BeeKind, FormBee, Maker, ScanBee, SortBee};
use crate::join::{JoinBee, JoinKeySpec};
use crate::compiled::Jit;
use crate::policy::{DEFAULT_COMPILE_NS, MakerChoice, Policy};
use crate::spec::{RelationSpec, ScanSpec, SortSpec};

/// Default bound on live machine code (bytes).
pub const DEFAULT_CODE_LIMIT: usize = 64 << 20;
/// Most one-off query bees kept for reuse.
pub const QUERY_LRU_ENTRIES: usize = 256;

/// Who a bee belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BeeOwner {
    /// A relation's deform or form bee.
    Relation { id: u64, name: String },
    /// A prepared statement's scan or sort bee.
    Statement(u64),
    /// A one-off query's scan or sort bee (kept in the LRU).
    Query,
}

impl fmt::Display for BeeOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BeeOwner::Relation { name, .. } => write!(f, "relation {name}"),
            BeeOwner::Statement(id) => write!(f, "statement {id}"),
            BeeOwner::Query => f.write_str("query"),
        }
    }
}

/// One row of the `beedb_bees` view.
#[derive(Clone, Debug, PartialEq)]
pub struct BeeRow {
    pub id: u64,
    pub kind: BeeKind,
    pub owner: String,
    pub maker: Maker,
    pub code_bytes: usize,
    pub build_us: f64,
    pub invocations: u64,
    pub tuples: u64,
    pub reason: String,
}

/// A relation's bees.
pub struct RelationBees {
    pub spec: Arc<RelationSpec>,
    pub deform: Arc<ScanBee>,
    pub form: Arc<FormBee>,
}

/// A query bee in the LRU.
#[derive(Clone)]
enum QueryBee {
    Scan(Arc<ScanBee>),
    Sort(Arc<SortBee>),
    Aggregate(Arc<AggBee>),
    Join(Arc<JoinBee>),
}

impl QueryBee {
    fn info(&self) -> &Arc<BeeInfo> {
        match self {
            QueryBee::Scan(b) => b.info(),
            QueryBee::Sort(b) => b.info(),
            QueryBee::Aggregate(b) => b.info(),
            QueryBee::Join(b) => b.info(),
        }
    }
}

/// What [`BeeCache`] needs of an operator's bee kind (sort, aggregate, join) to
/// make, share and re-make its bees the same way.
trait OperatorBee: Sized {
    type Spec: Clone;
    const KIND: BeeKind;
    /// The outputs the policy counts (key parts, or key parts and aggregates).
    fn outputs(spec: &Self::Spec) -> usize;
    fn spec_key(spec: &Self::Spec) -> String;
    fn make(spec: Self::Spec, maker: Maker, jit: Option<&Jit>, owner: BeeOwner, reason: String) -> Result<Self, String>;
    fn wrap(bee: Arc<Self>) -> QueryBee;
    fn unwrap(bee: &QueryBee) -> Option<&Arc<Self>>;
    fn spec(&self) -> &Self::Spec;
    fn maker(&self) -> Maker;
    fn info(&self) -> &Arc<BeeInfo>;
}

impl OperatorBee for SortBee {
    type Spec = SortSpec;
    const KIND: BeeKind = BeeKind::Sort;
    fn outputs(spec: &SortSpec) -> usize {
        spec.parts.len()
    }
    fn spec_key(spec: &SortSpec) -> String {
        spec.key()
    }
    fn make(spec: SortSpec, maker: Maker, jit: Option<&Jit>, owner: BeeOwner, reason: String) -> Result<SortBee, String> {
        SortBee::make(spec, maker, jit, owner, reason)
    }
    fn wrap(bee: Arc<SortBee>) -> QueryBee {
        QueryBee::Sort(bee)
    }
    fn unwrap(bee: &QueryBee) -> Option<&Arc<SortBee>> {
        if let QueryBee::Sort(b) = bee { Some(b) } else { None }
    }
    fn spec(&self) -> &SortSpec {
        SortBee::spec(self)
    }
    fn maker(&self) -> Maker {
        SortBee::maker(self)
    }
    fn info(&self) -> &Arc<BeeInfo> {
        SortBee::info(self)
    }
}

impl OperatorBee for AggBee {
    type Spec = AggSpec;
    const KIND: BeeKind = BeeKind::Aggregate;
    fn outputs(spec: &AggSpec) -> usize {
        spec.keys.len() + spec.aggs.len()
    }
    fn spec_key(spec: &AggSpec) -> String {
        spec.key()
    }
    fn make(spec: AggSpec, maker: Maker, jit: Option<&Jit>, owner: BeeOwner, reason: String) -> Result<AggBee, String> {
        AggBee::make(spec, maker, jit, owner, reason)
    }
    fn wrap(bee: Arc<AggBee>) -> QueryBee {
        QueryBee::Aggregate(bee)
    }
    fn unwrap(bee: &QueryBee) -> Option<&Arc<AggBee>> {
        if let QueryBee::Aggregate(b) = bee { Some(b) } else { None }
    }
    fn spec(&self) -> &AggSpec {
        AggBee::spec(self)
    }
    fn maker(&self) -> Maker {
        AggBee::maker(self)
    }
    fn info(&self) -> &Arc<BeeInfo> {
        AggBee::info(self)
    }
}

impl OperatorBee for JoinBee {
    type Spec = JoinKeySpec;
    const KIND: BeeKind = BeeKind::Join;
    fn outputs(spec: &JoinKeySpec) -> usize {
        spec.parts.len()
    }
    fn spec_key(spec: &JoinKeySpec) -> String {
        spec.key()
    }
    fn make(spec: JoinKeySpec, maker: Maker, jit: Option<&Jit>, owner: BeeOwner, reason: String) -> Result<JoinBee, String> {
        JoinBee::make(spec, maker, jit, owner, reason)
    }
    fn wrap(bee: Arc<JoinBee>) -> QueryBee {
        QueryBee::Join(bee)
    }
    fn unwrap(bee: &QueryBee) -> Option<&Arc<JoinBee>> {
        if let QueryBee::Join(b) = bee { Some(b) } else { None }
    }
    fn spec(&self) -> &JoinKeySpec {
        JoinBee::spec(self)
    }
    fn maker(&self) -> Maker {
        JoinBee::maker(self)
    }
    fn info(&self) -> &Arc<BeeInfo> {
        JoinBee::info(self)
    }
}

struct QueryEntry {
    bee: QueryBee,
    last_use: u64,
}

#[derive(Default)]
struct QueryLru {
    map: HashMap<String, QueryEntry>,
    tick: u64,
}

/// The per-database bee cache (shared by its connections).
pub struct BeeCache {
    jit: OnceLock<Result<Jit, String>>,
    verify: bool,
    registry: Mutex<BTreeMap<u64, Weak<BeeInfo>>>,
    relations: Mutex<HashMap<u64, Arc<RelationBees>>>,
    queries: Mutex<QueryLru>,
    code_limit: AtomicUsize,
    /// (compiles, total ns) for the policy's compile cost.
    compiles: Mutex<(u64, u64)>,
    /// Tuples per relation, as last counted by a full scan and adjusted by inserts:
    /// the policy's expected tuples.
    sizes: Mutex<HashMap<u64, u64>>,
}

impl Default for BeeCache {
    fn default() -> Self {
        BeeCache::new()
    }
}

impl BeeCache {
    pub fn new() -> BeeCache {
        BeeCache {
            jit: OnceLock::new(),
            verify: cfg!(debug_assertions),
            registry: Mutex::new(BTreeMap::new()),
            relations: Mutex::new(HashMap::new()),
            queries: Mutex::new(QueryLru::default()),
            code_limit: AtomicUsize::new(DEFAULT_CODE_LIMIT),
            compiles: Mutex::new((0, 0)),
            sizes: Mutex::new(HashMap::new()),
        }
    }

    /// Expected tuples of relation `id` (0 when never counted).
    pub fn relation_size(&self, id: u64) -> u64 {
        self.sizes.lock().get(&id).copied().unwrap_or(0)
    }

    /// Records that a full scan of relation `id` saw `tuples` tuples. A caller that
    /// counted every tuple and found none notes one: 0 reads as "never counted", and
    /// a relation found empty must not become unknown again (the optimizer would then
    /// assume a default size, and plans would differ with bees on and off, since only
    /// bee scans count).
    pub fn note_relation_size(&self, id: u64, tuples: u64) {
        self.sizes.lock().insert(id, tuples);
    }

    /// Puts back a size read earlier with [`BeeCache::relation_size`] (a rolled-back
    /// savepoint's): 0 makes the relation "never counted" again.
    pub fn restore_relation_size(&self, id: u64, size: u64) {
        let mut sizes = self.sizes.lock();
        if size == 0 {
            sizes.remove(&id);
        } else {
            sizes.insert(id, size);
        }
    }

    /// Records `n` more tuples inserted into relation `id`.
    pub fn note_inserts(&self, id: u64, n: u64) {
        *self.sizes.lock().entry(id).or_insert(0) += n;
    }

    /// The code generator, built on first use; `None` if the host is unsupported.
    pub fn jit(&self) -> Option<&Jit> {
        self.jit.get_or_init(|| Jit::new(self.verify)).as_ref().ok()
    }

    /// The policy's inputs for `choice`.
    pub fn policy(&self, choice: MakerChoice) -> Policy {
        let (n, total) = *self.compiles.lock();
        Policy {
            choice,
            compile_ns: if n == 0 {
                DEFAULT_COMPILE_NS
            } else {
                total as f64 / n as f64
            },
            compiler_available: choice == MakerChoice::Instantiated || self.jit().is_some(),
        }
    }

    pub fn code_limit(&self) -> usize {
        self.code_limit.load(Ordering::Relaxed)
    }

    pub fn set_code_limit(&self, bytes: usize) {
        self.code_limit.store(bytes, Ordering::Relaxed);
        self.make_room(0);
    }

    /// Bytes of machine code held by live bees.
    pub fn code_bytes(&self) -> usize {
        self.registry
            .lock()
            .values()
            .filter_map(Weak::upgrade)
            .map(|i| i.code_bytes)
            .sum()
    }

    /// Evicts query bees (least recently used first) until `extra` more bytes fit
    /// under the limit; whether they do.
    fn make_room(&self, extra: usize) -> bool {
        let limit = self.code_limit();
        loop {
            if self.code_bytes() + extra <= limit {
                return true;
            }
            let mut q = self.queries.lock();
            let victim = q
                .map
                .iter()
                .filter(|(_, e)| e.bee.info().code_bytes > 0)
                .min_by_key(|(_, e)| e.last_use)
                .map(|(k, _)| k.clone());
            match victim {
                Some(k) => {
                    q.map.remove(&k);
                }
                None => return false,
            }
        }
    }

    fn register(&self, info: &Arc<BeeInfo>) {
        let mut r = self.registry.lock();
        r.retain(|_, w| w.strong_count() > 0);
        r.insert(info.id, Arc::downgrade(info));
        if info.maker == Maker::Compiled {
            let mut c = self.compiles.lock();
            c.0 += 1;
            c.1 += info.build_ns;
        }
    }

    /// Decides the maker, honouring the code budget.
    fn decide(&self, policy: &Policy, kind: BeeKind, expected: u64, outputs: usize, nodes: usize) -> (Maker, String) {
        let (maker, why) = policy.choose(kind, expected, outputs, nodes);
        if maker == Maker::Compiled && !self.make_room(4096) {
            return (Maker::Instantiated, format!("code limit of {} bytes reached", self.code_limit()));
        }
        (maker, why)
    }

    fn make_scan(&self, spec: ScanSpec, maker: Maker, why: String, owner: BeeOwner) -> Result<ScanBee, String> {
        match ScanBee::make(spec.clone(), maker, self.jit(), owner.clone(), why) {
            Ok(b) => Ok(b),
            Err(e) if maker == Maker::Compiled => {
                ScanBee::make(spec, Maker::Instantiated, None, owner, format!("compile failed: {e}"))
            }
            Err(e) => Err(e),
        }
    }

    /// The bees of relation `id` for `spec`, made (or re-made compiled, when the
    /// policy now says so for `expected_tuples`) as needed.
    pub fn relation(
        &self,
        id: u64,
        name: &str,
        spec: RelationSpec,
        expected_tuples: u64,
        choice: MakerChoice,
    ) -> Result<Arc<RelationBees>, String> {
        let policy = self.policy(choice);
        let natts = spec.natts();
        {
            let rels = self.relations.lock();
            if let Some(r) = rels.get(&id)
                && r.spec.same_key(&spec)
            {
                let want = policy.maker(BeeKind::Deform, expected_tuples, natts, 0);
                let have = r.deform.maker();
                if want == have || choice == MakerChoice::Auto && have == Maker::Compiled {
                    return Ok(r.clone());
                }
            }
        }
        let spec = Arc::new(spec);
        let owner = BeeOwner::Relation {
            id,
            name: name.to_string(),
        };
        let (maker, why) = self.decide(&policy, BeeKind::Deform, expected_tuples, natts, 0);
        let deform = self.make_scan(ScanSpec::deform(spec.clone()), maker, why, owner.clone())?;
        let (maker, why) = self.decide(&policy, BeeKind::Form, expected_tuples, natts, 0);
        let form = match FormBee::make(spec.clone(), maker, self.jit(), owner.clone(), why) {
            Ok(b) => b,
            Err(e) if maker == Maker::Compiled => FormBee::make(
                spec.clone(),
                Maker::Instantiated,
                None,
                owner,
                format!("compile failed: {e}"),
            )?,
            Err(e) => return Err(e),
        };
        self.register(deform.info());
        self.register(form.info());
        let bees = Arc::new(RelationBees {
            spec,
            deform: Arc::new(deform),
            form: Arc::new(form),
        });
        self.relations.lock().insert(id, bees.clone());
        Ok(bees)
    }

    /// The cached bees of relation `id`, if any.
    pub fn relation_bees(&self, id: u64) -> Option<Arc<RelationBees>> {
        self.relations.lock().get(&id).cloned()
    }

    /// Retires the bees of every relation for which `keep(id, layout_key)` is false
    /// (dropped, or its layout changed). Their code is freed once no running
    /// statement holds them.
    pub fn retire_relations(&self, keep: impl Fn(u64, &str) -> bool) {
        let mut gone = Vec::new();
        let mut retired = Vec::new();
        self.relations.lock().retain(|&id, r| {
            let k = keep(id, &r.spec.key());
            if !k {
                gone.push(id);
                retired.push(r.deform.info().id);
                retired.push(r.form.info().id);
            }
            k
        });
        // A statement may still hold a plan with these bees attached (it is made
        // again before it runs under the new catalog): they leave the registry now,
        // and their memory goes with the last plan that holds them.
        {
            let mut registry = self.registry.lock();
            for id in retired {
                registry.remove(&id);
            }
        }
        let mut sizes = self.sizes.lock();
        for id in gone {
            sizes.remove(&id);
        }
    }

    /// A scan bee for `spec`. Statement-owned bees are not shared (the statement keeps
    /// them); one-off query bees are looked up in and added to the LRU.
    pub fn scan(
        &self,
        spec: ScanSpec,
        owner: BeeOwner,
        expected_tuples: u64,
        choice: MakerChoice,
    ) -> Result<Arc<ScanBee>, String> {
        let policy = self.policy(choice);
        let nodes = spec.predicate.as_ref().map_or(0, |p| p.code_nodes());
        let outputs = spec.outputs.len();
        let key = format!("{choice}|{}", spec.key());
        if owner == BeeOwner::Query {
            let mut q = self.queries.lock();
            q.tick += 1;
            let tick = q.tick;
            if let Some(e) = q.map.get_mut(&key)
                && let QueryBee::Scan(b) = &e.bee
                && !self.outgrown(b, expected_tuples, choice)
            {
                e.last_use = tick;
                return Ok(b.clone());
            }
        }
        let (maker, why) = self.decide(&policy, BeeKind::Scan, expected_tuples, outputs, nodes);
        let bee = Arc::new(self.make_scan(spec, maker, why, owner.clone())?);
        self.register(bee.info());
        if owner == BeeOwner::Query {
            self.remember(key, QueryBee::Scan(bee.clone()));
        }
        Ok(bee)
    }

    /// Puts a one-off query's bee in the LRU (evicting the least recently used).
    fn remember(&self, key: String, bee: QueryBee) {
        let mut q = self.queries.lock();
        if q.map.len() >= QUERY_LRU_ENTRIES
            && let Some(k) = q.map.iter().min_by_key(|(_, e)| e.last_use).map(|(k, _)| k.clone())
        {
            q.map.remove(&k);
        }
        let tick = q.tick;
        q.map.insert(key, QueryEntry { bee, last_use: tick });
    }

    /// A sort bee for `spec`, for a sort of about `expected_rows` rows. Owned like
    /// scan bees: a statement keeps its own; one-off queries share them through the
    /// LRU (re-made compiled when an instantiated one meets a sort the policy would
    /// compile for).
    pub fn sort(&self, spec: SortSpec, owner: BeeOwner, expected_rows: u64, choice: MakerChoice) -> Result<Arc<SortBee>, String> {
        self.operator_bee(spec, owner, expected_rows, choice)
    }

    /// An aggregate bee for `spec`, for about `expected_rows` input rows; owned like
    /// sort bees. The policy counts one key part or aggregate as one output.
    pub fn agg(&self, spec: AggSpec, owner: BeeOwner, expected_rows: u64, choice: MakerChoice) -> Result<Arc<AggBee>, String> {
        self.operator_bee(spec, owner, expected_rows, choice)
    }

    /// A join bee for `spec`, for a probe of about `expected_rows` rows; owned like
    /// sort bees.
    pub fn join(&self, spec: JoinKeySpec, owner: BeeOwner, expected_rows: u64, choice: MakerChoice) -> Result<Arc<JoinBee>, String> {
        self.operator_bee(spec, owner, expected_rows, choice)
    }

    /// Whether sort bee `bee` should be made again for `expected_rows`
    /// ([`BeeCache::operator_outgrown`]).
    pub fn sort_outgrown(&self, bee: &SortBee, expected_rows: u64, choice: MakerChoice) -> bool {
        self.operator_outgrown(bee, expected_rows, choice)
    }

    /// Whether aggregate bee `bee` should be made again for `expected_rows`.
    pub fn agg_outgrown(&self, bee: &AggBee, expected_rows: u64, choice: MakerChoice) -> bool {
        self.operator_outgrown(bee, expected_rows, choice)
    }

    /// Whether join bee `bee` should be made again for `expected_rows`.
    pub fn join_outgrown(&self, bee: &JoinBee, expected_rows: u64, choice: MakerChoice) -> bool {
        self.operator_outgrown(bee, expected_rows, choice)
    }

    /// The bee of an operator (sort, aggregate, join) for `spec`, for about
    /// `expected_rows` rows: a one-off query's from the LRU when it holds one that has
    /// not been outgrown, else made by the maker the policy picks (instantiated when
    /// compiling fails) and registered.
    fn operator_bee<B: OperatorBee>(&self, spec: B::Spec, owner: BeeOwner, expected_rows: u64, choice: MakerChoice) -> Result<Arc<B>, String> {
        let policy = self.policy(choice);
        let outputs = B::outputs(&spec);
        let key = format!("{choice}|{}", B::spec_key(&spec));
        if owner == BeeOwner::Query {
            let mut q = self.queries.lock();
            q.tick += 1;
            let tick = q.tick;
            if let Some(e) = q.map.get_mut(&key)
                && let Some(b) = B::unwrap(&e.bee)
                && !self.operator_outgrown(&**b, expected_rows, choice)
            {
                e.last_use = tick;
                return Ok(b.clone());
            }
        }
        let (maker, why) = self.decide(&policy, B::KIND, expected_rows, outputs, 0);
        let bee = match B::make(spec.clone(), maker, self.jit(), owner.clone(), why) {
            Ok(b) => b,
            Err(e) if maker == Maker::Compiled => {
                B::make(spec, Maker::Instantiated, None, owner.clone(), format!("compile failed: {e}"))?
            }
            Err(e) => return Err(e),
        };
        let bee = Arc::new(bee);
        self.register(bee.info());
        if owner == BeeOwner::Query {
            self.remember(key, B::wrap(bee.clone()));
        }
        Ok(bee)
    }

    /// Whether operator bee `bee` was instantiated but the policy now compiles one
    /// for `expected_rows`, so the caller should make it again; never for a bee
    /// instantiated because compiling failed (it would fail again).
    fn operator_outgrown<B: OperatorBee>(&self, bee: &B, expected_rows: u64, choice: MakerChoice) -> bool {
        choice == MakerChoice::Auto
            && bee.maker() == Maker::Instantiated
            && !bee.info().reason.starts_with("compile failed")
            && self.policy(choice).maker(B::KIND, expected_rows, B::outputs(bee.spec()), 0) == Maker::Compiled
    }

    /// Whether `bee` was instantiated but the policy now compiles a bee of its kind
    /// for `expected_tuples` (the relation grew, or its size became known): the
    /// caller should make it again.
    pub fn outgrown(&self, bee: &ScanBee, expected_tuples: u64, choice: MakerChoice) -> bool {
        if choice != MakerChoice::Auto || bee.maker() == Maker::Compiled {
            return false;
        }
        let spec = bee.spec();
        let kind = if spec.is_deform() { BeeKind::Deform } else { BeeKind::Scan };
        let nodes = spec.predicate.as_ref().map_or(0, |p| p.code_nodes());
        self.policy(choice).maker(kind, expected_tuples, spec.outputs.len(), nodes) == Maker::Compiled
    }

    /// The live bees, by id.
    pub fn rows(&self) -> Vec<BeeRow> {
        let mut r = self.registry.lock();
        r.retain(|_, w| w.strong_count() > 0);
        r.values()
            .filter_map(Weak::upgrade)
            .map(|i| BeeRow {
                id: i.id,
                kind: i.kind,
                owner: i.owner.to_string(),
                maker: i.maker,
                code_bytes: i.code_bytes,
                build_us: i.build_ns as f64 / 1000.0,
                invocations: i.invocations(),
                tuples: i.tuples(),
                reason: i.reason.clone(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use beedb_storage::tuple::{ColumnFormat, TupleLayout};

    use super::*;
    use crate::spec::{CmpOp, Const, Pred, ValueKind};

    fn rel() -> RelationSpec {
        let layout = TupleLayout::new(&[ColumnFormat::fixed(4, false), ColumnFormat::variable(true)]).unwrap();
        RelationSpec::new(layout, vec![ValueKind::Int(4), ValueKind::Bytes]).unwrap()
    }

    fn scan(rel: &Arc<RelationSpec>, k: i64) -> ScanSpec {
        ScanSpec {
            relation: rel.clone(),
            predicate: Some(Pred::Cmp {
                attr: 0,
                op: CmpOp::Gt,
                value: Const::Int(k),
            }),
            outputs: vec![1],
        }
    }

    #[test]
    fn relation_bees_are_kept_remade_when_worth_it_and_retired() {
        let cache = BeeCache::new();
        let a = cache.relation(7, "t", rel(), 0, MakerChoice::Auto).unwrap();
        assert_eq!(a.deform.maker(), Maker::Instantiated);
        let again = cache.relation(7, "t", rel(), 10, MakerChoice::Auto).unwrap();
        assert!(Arc::ptr_eq(&a, &again), "same layout, still small: the same bees");
        if cache.jit().is_some() {
            let big = cache.relation(7, "t", rel(), 100_000_000, MakerChoice::Auto).unwrap();
            assert_eq!(big.deform.maker(), Maker::Compiled);
            assert!(cache.code_bytes() > 0);
        }
        // The instantiated pair is still held by `a`; the compiled pair by the cache.
        assert_eq!(cache.rows().len(), if cache.jit().is_some() { 4 } else { 2 });
        drop((a, again));
        cache.retire_relations(|_, _| false);
        assert!(cache.relation_bees(7).is_none());
        assert!(cache.rows().is_empty(), "retired bees are freed");
        assert_eq!(cache.code_bytes(), 0);
    }

    #[test]
    fn query_bees_are_reused_bounded_and_evicted_for_code_room() {
        let cache = BeeCache::new();
        let rel = Arc::new(rel());
        let one = cache.scan(scan(&rel, 1), BeeOwner::Query, 0, MakerChoice::Auto).unwrap();
        let same = cache.scan(scan(&rel, 1), BeeOwner::Query, 0, MakerChoice::Auto).unwrap();
        assert!(Arc::ptr_eq(&one, &same));
        // A statement's bee is its own.
        let st = cache.scan(scan(&rel, 1), BeeOwner::Statement(3), 0, MakerChoice::Auto).unwrap();
        assert!(!Arc::ptr_eq(&one, &st));
        drop(st);
        // The LRU holds at most QUERY_LRU_ENTRIES.
        for k in 0..(QUERY_LRU_ENTRIES as i64 + 10) {
            cache.scan(scan(&rel, 100 + k), BeeOwner::Query, 0, MakerChoice::Instantiated).unwrap();
        }
        drop((one, same));
        assert!(cache.rows().len() <= QUERY_LRU_ENTRIES);
        if cache.jit().is_none() {
            return;
        }
        // Compiled query bees are evicted to make room under the code limit.
        let a = cache.scan(scan(&rel, -1), BeeOwner::Query, 0, MakerChoice::Compiled).unwrap();
        assert_eq!(a.maker(), Maker::Compiled);
        let bytes = a.info().code_bytes;
        drop(a);
        cache.set_code_limit(bytes + 4096 + 100);
        let b = cache.scan(scan(&rel, -2), BeeOwner::Query, 0, MakerChoice::Compiled).unwrap();
        assert_eq!(b.maker(), Maker::Compiled);
        assert!(cache.code_bytes() <= cache.code_limit(), "the first was evicted");
        // With no room at all, compiled requests are instantiated.
        cache.set_code_limit(0);
        let c = cache.scan(scan(&rel, -3), BeeOwner::Query, 0, MakerChoice::Compiled).unwrap();
        assert_eq!(c.maker(), Maker::Instantiated);
        assert!(c.info().reason.contains("code limit"), "{}", c.info().reason);
        // b is still held here, so its code stays until dropped.
        drop(b);
    }
}
