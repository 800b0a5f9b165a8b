//! What every thread shares about scripts: the EVAL script cache (SHA1 → body) and the
//! FUNCTION libraries. Each worker thread compiles from here into its own interpreter
//! (`script/vm.rs`), lazily: a change bumps a generation number, and a thread whose
//! interpreter was built at an older one rebuilds before its next script. So SCRIPT LOAD and
//! FUNCTION LOAD take effect on every thread before they reply.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use larder_script::shebang::ScriptFlags;
use larder_script::vm::{script_id, FunctionMeta, IdMap, ScriptId};
use parking_lot::RwLock;

use super::run::Width;

/// One cached EVAL script.
#[derive(Debug)]
pub struct Script {
    pub body: Vec<u8>,
    pub flags: ScriptFlags,
    /// How widely its runs lock ([`Width`]): learned from its runs, never narrowed again.
    pub width: AtomicU8,
}

/// One function of a library.
#[derive(Debug)]
pub struct Function {
    pub meta: FunctionMeta,
    /// As [`Script::width`].
    pub width: AtomicU8,
}

/// One FUNCTION library: its code (shebang line included) and what it registered.
#[derive(Debug)]
pub struct Library {
    pub name: String,
    pub code: String,
    pub functions: Vec<Function>,
}

/// FUNCTION RESTORE's policy (and a snapshot's, which replaces).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restore {
    /// Drop every library first.
    Flush,
    /// Add; a library that exists already is an error.
    Append,
    /// Add, replacing libraries of the same name.
    Replace,
}

/// Why a library cannot join the others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Clash {
    /// A library of this name exists.
    Library(String),
    /// Another library has a function of this name.
    Function(String),
}

/// The libraries, by name (case-sensitive, as Redis 7.0), and their functions' index (by
/// lower-cased name: function names are case-insensitive).
#[derive(Clone, Debug, Default)]
pub struct Libraries {
    pub by_name: BTreeMap<String, Arc<Library>>,
    /// Lower-cased function name → its library.
    pub functions: HashMap<String, Arc<Library>>,
}

impl Libraries {
    /// The function `name` (any case) and its library.
    pub fn function(&self, name: &str) -> Option<(&Arc<Library>, &Function)> {
        let lib = self.functions.get(&name.to_ascii_lowercase())?;
        let f = lib
            .functions
            .iter()
            .find(|f| f.meta.name.eq_ignore_ascii_case(name))?;
        Some((lib, f))
    }

    /// Add `lib`, replacing one of the same name when `replace`.
    pub fn add(&mut self, lib: Library, replace: bool) -> Result<(), Clash> {
        if !replace && self.by_name.contains_key(&lib.name) {
            return Err(Clash::Library(lib.name));
        }
        for f in &lib.functions {
            if let Some(other) = self.functions.get(&f.meta.name.to_ascii_lowercase()) {
                if other.name != lib.name {
                    return Err(Clash::Function(f.meta.name.clone()));
                }
            }
        }
        self.remove(&lib.name);
        let lib = Arc::new(lib);
        for f in &lib.functions {
            self.functions
                .insert(f.meta.name.to_ascii_lowercase(), Arc::clone(&lib));
        }
        self.by_name.insert(lib.name.clone(), lib);
        Ok(())
    }

    /// Remove the library `name`; whether it existed.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(lib) = self.by_name.remove(name) else {
            return false;
        };
        for f in &lib.functions {
            self.functions.remove(&f.meta.name.to_ascii_lowercase());
        }
        true
    }

    /// How many functions all libraries have.
    pub fn function_count(&self) -> usize {
        self.functions.len()
    }
}

/// The script cache and the libraries (`Server::scripts`).
#[derive(Debug, Default)]
pub struct Scripts {
    cache: RwLock<IdMap<Arc<Script>>>,
    /// Bumped by SCRIPT FLUSH: threads drop their compiled scripts.
    cache_generation: AtomicU64,
    /// Bytes of the cached bodies (INFO `used_memory_scripts_eval`).
    cache_bytes: AtomicUsize,
    libraries: RwLock<Libraries>,
    /// Bumped by every change of the libraries: threads reload theirs.
    library_generation: AtomicU64,
    /// Each thread interpreter's memory as of its last script (INFO).
    vm_bytes: parking_lot::Mutex<Vec<Arc<AtomicUsize>>>,
}

impl Scripts {
    /// The cached script `sha` (lower-case hex).
    pub fn get(&self, id: &ScriptId) -> Option<Arc<Script>> {
        self.cache.read().get(id).cloned()
    }

    /// Cache `body` under `sha` (once; a second insert returns the first).
    pub fn insert(&self, sha: &str, body: &[u8], flags: ScriptFlags) -> Arc<Script> {
        let id = script_id(sha).expect("a script's SHA1 in hex");
        let mut cache = self.cache.write();
        if let Some(s) = cache.get(&id) {
            return Arc::clone(s);
        }
        let script = Arc::new(Script {
            body: body.to_vec(),
            flags,
            width: AtomicU8::new(Width::Keys as u8),
        });
        self.cache_bytes
            .fetch_add(body.len() + sha.len(), Ordering::Relaxed);
        cache.insert(id, Arc::clone(&script));
        script
    }

    /// Whether `sha` is cached.
    pub fn exists(&self, sha: &str) -> bool {
        script_id(sha).is_some_and(|id| self.cache.read().contains_key(&id))
    }

    /// SCRIPT FLUSH: forget every script, on every thread.
    pub fn flush(&self) {
        let mut cache = self.cache.write();
        cache.clear();
        self.cache_bytes.store(0, Ordering::Relaxed);
        self.cache_generation.fetch_add(1, Ordering::Release);
    }

    /// How many scripts are cached (INFO `number_of_cached_scripts`).
    pub fn cached(&self) -> usize {
        self.cache.read().len()
    }

    /// Bytes the cached bodies take.
    pub fn cache_bytes(&self) -> usize {
        self.cache_bytes.load(Ordering::Relaxed)
    }

    /// A slot for a new thread interpreter to report its memory in.
    pub(crate) fn vm_slot(&self) -> Arc<AtomicUsize> {
        let slot = Arc::new(AtomicUsize::new(0));
        self.vm_bytes.lock().push(Arc::clone(&slot));
        slot
    }

    /// Memory of every thread's interpreter, as each reported it last.
    pub fn vm_bytes(&self) -> usize {
        self.vm_bytes
            .lock()
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .sum()
    }

    /// Functions, libraries, and the bytes of the libraries' code (INFO).
    pub fn library_sizes(&self) -> (usize, usize, usize) {
        let libs = self.libraries.read();
        let code = libs.by_name.values().map(|l| l.code.len()).sum();
        (libs.function_count(), libs.by_name.len(), code)
    }

    pub fn cache_generation(&self) -> u64 {
        self.cache_generation.load(Ordering::Acquire)
    }

    pub fn library_generation(&self) -> u64 {
        self.library_generation.load(Ordering::Acquire)
    }

    /// Read the libraries.
    pub fn libraries(&self) -> parking_lot::RwLockReadGuard<'_, Libraries> {
        self.libraries.read()
    }

    /// Change the libraries with `f`; the generation moves (every thread reloads) when `f`
    /// says it changed something.
    pub fn change_libraries<R>(&self, f: impl FnOnce(&mut Libraries) -> (R, bool)) -> R {
        let mut libs = self.libraries.write();
        let (r, changed) = f(&mut libs);
        if changed {
            self.library_generation.fetch_add(1, Ordering::Release);
        }
        r
    }

    /// Every library's code, by name (snapshots, FUNCTION DUMP).
    pub fn library_codes(&self) -> Vec<String> {
        self.libraries
            .read()
            .by_name
            .values()
            .map(|l| l.code.clone())
            .collect()
    }

    /// Load libraries from their codes (FUNCTION RESTORE, a snapshot) under `policy`: all of
    /// them or none. The error is Redis's text.
    pub fn restore_libraries(
        &self,
        server: &crate::state::Server,
        codes: Vec<String>,
        policy: Restore,
    ) -> Result<(), String> {
        self.restore_libraries_then(server, codes, policy, || {})
    }

    /// [`Scripts::restore_libraries`], calling `changed` while the libraries are still
    /// locked once they have changed (FUNCTION RESTORE records itself there).
    pub fn restore_libraries_then(
        &self,
        server: &crate::state::Server,
        codes: Vec<String>,
        policy: Restore,
        changed: impl FnOnce(),
    ) -> Result<(), String> {
        let mut vm = super::function::scratch_vm(server)?;
        let mut loaded = Vec::with_capacity(codes.len());
        for code in codes {
            loaded.push(super::function::compile_library(&mut vm, &code)?);
        }
        self.change_libraries(|libs| {
            let mut next = match policy {
                Restore::Flush => Libraries::default(),
                Restore::Append | Restore::Replace => libs.clone(),
            };
            for lib in loaded {
                if let Err(clash) = next.add(lib, policy == Restore::Replace) {
                    // FUNCTION RESTORE's texts (`libraryJoin`), not LOAD's.
                    let e = match clash {
                        Clash::Library(n) => format!("ERR Library {n} already exists"),
                        Clash::Function(f) => format!("ERR Function {f} already exists"),
                    };
                    return (Err(e), false);
                }
            }
            *libs = next;
            changed();
            (Ok(()), true)
        })
    }
}
