//! Each worker thread's interpreter, kept in step with the shared script cache and
//! libraries (`registry.rs`): a thread compiles a script the first time it runs it here, and
//! reloads the libraries when their generation moved.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use larder_script::vm::{IdMap, ScriptId, Vm, VmOptions};

use std::sync::atomic::Ordering;

use super::registry::{Library, Script};
use crate::config::Param;
use crate::error::{Error, Result};
use crate::state::Server;

/// A script as this thread knows it: the shared one, and the width this thread runs it at
/// (learned on this thread, or from the shared width when first seen here), so a run reads
/// and bumps nothing other threads write.
pub(crate) struct LocalScript {
    pub shared: Arc<Script>,
    pub width: Cell<u8>,
    pub hints: CallHints,
}

/// A function as this thread knows it (see [`LocalScript`]).
pub(crate) struct LocalFunction {
    pub lib: Arc<Library>,
    /// The function's position in `lib.functions`.
    pub index: usize,
    pub width: Cell<u8>,
    pub hints: CallHints,
}

/// The command a script's first redis.calls named in its last run, by position: a script
/// mostly runs the same commands in the same order, and checking the command it ran there
/// last (`Registry::resolve_hinted`) is cheaper than lowering and hashing the name.
pub(crate) struct CallHints(pub [Cell<usize>; 8]);

impl Default for CallHints {
    fn default() -> Self {
        CallHints(std::array::from_fn(|_| Cell::new(usize::MAX)))
    }
}

/// A thread's interpreter and the generations it was built at.
pub(crate) struct Interp {
    pub vm: Vm,
    /// Scripts run on this thread since the last SCRIPT FLUSH.
    scripts: IdMap<Rc<LocalScript>>,
    /// Functions called on this thread since the libraries last changed (lower-cased names).
    functions: hashbrown::HashMap<String, Rc<LocalFunction>>,
    /// Where INFO reads this interpreter's memory.
    memory: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    scripts_generation: u64,
    libraries_generation: u64,
    /// A run's buffers, kept from run to run.
    pub(super) scratch: super::run::Scratch,
}

thread_local! {
    static INTERP: RefCell<Option<Interp>> = const { RefCell::new(None) };
}

/// Run `f` with this thread's interpreter, made first if need be and brought up to date
/// with the script cache and the libraries.
pub(crate) fn with<R>(server: &Server, f: impl FnOnce(&mut Interp) -> R) -> Result<R> {
    INTERP.with(|cell| {
        // A script's own commands never start another script (EVAL and FCALL are
        // `noscript`), and a busy thread's other clients get -BUSY before reaching here.
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return Err(Error::Static(crate::busy::BUSY_EVAL));
        };
        if slot.is_none() {
            *slot = Some(Interp::new(server)?);
        }
        let Some(interp) = slot.as_mut() else {
            return Err(Error::Static("ERR no interpreter"));
        };
        interp.sync(server);
        let r = f(interp);
        interp.memory.store(
            interp.vm.used_memory(),
            std::sync::atomic::Ordering::Relaxed,
        );
        Ok(r)
    })
}

/// Bytes this thread's interpreter uses (0 before its first script).
pub(crate) fn used_memory() -> usize {
    INTERP.with(|cell| {
        cell.try_borrow()
            .ok()
            .and_then(|s| s.as_ref().map(|i| i.vm.used_memory()))
            .unwrap_or(0)
    })
}

impl Interp {
    fn new(server: &Server) -> Result<Interp> {
        let opts = VmOptions {
            memory_limit_bytes: server.config.num(Param::LuaMemoryLimit).max(0) as usize,
        };
        let vm = Vm::new(&opts)
            .map_err(|e| Error::Owned(format!("ERR cannot start the Lua interpreter: {e}")))?;
        Ok(Interp {
            vm,
            scripts: IdMap::default(),
            functions: hashbrown::HashMap::new(),
            memory: server.scripts.vm_slot(),
            scripts_generation: server.scripts.cache_generation(),
            libraries_generation: u64::MAX,
            scratch: super::run::Scratch::default(),
        })
    }

    /// Drop compiled scripts after SCRIPT FLUSH; reload the libraries after they changed.
    fn sync(&mut self, server: &Server) {
        let g = server.scripts.cache_generation();
        if g != self.scripts_generation {
            self.vm.forget_scripts();
            self.scripts.clear();
            self.scripts_generation = g;
        }
        let g = server.scripts.library_generation();
        if g != self.libraries_generation {
            self.vm.clear_libraries();
            self.functions.clear();
            let libs = server.scripts.libraries();
            for lib in libs.by_name.values() {
                // Each was loaded once already (FUNCTION LOAD checked it); a library that
                // fails here only leaves its functions out of this thread.
                if let Err(e) = self.vm.load_library(&lib.name, &lib.code) {
                    tracing::warn!("library {} failed to load on this thread: {e}", lib.name);
                }
            }
            self.libraries_generation = g;
        }
    }
}

impl Interp {
    /// The cached script `sha` (lower-case hex), as this thread knows it.
    pub(crate) fn script(&mut self, server: &Server, id: &ScriptId) -> Option<Rc<LocalScript>> {
        if let Some(s) = self.scripts.get(id) {
            return Some(Rc::clone(s));
        }
        let shared = server.scripts.get(id)?;
        let local = Rc::new(LocalScript {
            width: Cell::new(shared.width.load(Ordering::Relaxed)),
            shared,
            hints: CallHints::default(),
        });
        self.scripts.insert(*id, Rc::clone(&local));
        Some(local)
    }

    /// The function `name` (any case), as this thread knows it.
    pub(crate) fn function(&mut self, server: &Server, name: &str) -> Option<Rc<LocalFunction>> {
        if let Some(f) = self.functions.get(name) {
            return Some(Rc::clone(f));
        }
        let lower = name.to_ascii_lowercase();
        if let Some(f) = self.functions.get(&lower) {
            return Some(Rc::clone(f));
        }
        let libs = server.scripts.libraries();
        let (lib, f) = libs.function(name)?;
        let index = lib.functions.iter().position(|g| std::ptr::eq(g, f))?;
        let local = Rc::new(LocalFunction {
            lib: Arc::clone(lib),
            index,
            width: Cell::new(f.width.load(Ordering::Relaxed)),
            hints: CallHints::default(),
        });
        self.functions.insert(lower, Rc::clone(&local));
        Some(local)
    }
}
