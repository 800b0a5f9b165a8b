//! Placeholder with the contract's API until the interpreter lands (see the issue 14 notes).
pub use crate::shebang::ScriptFlags;
use larder_resp::ReplyBuf;
pub struct VmOptions {
    pub memory_limit_bytes: usize,
}
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abort {
    Retry,
    Killed,
    Shutdown,
}
pub trait Host {
    fn call(&mut self, argv: &[&[u8]], out: &mut ReplyBuf) -> Result<(), Abort>;
    fn tick(&mut self) -> Result<(), Abort>;
    fn log(&mut self, level: u8, msg: &str);
    fn set_repl(&mut self, flags: u8);
}
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionMeta {
    pub name: String,
    pub description: Option<String>,
    pub flags: ScriptFlags,
}
pub struct Vm;
impl Vm {
    pub fn new(_o: &VmOptions) -> mlua::Result<Vm> {
        Ok(Vm)
    }
    pub fn compile_script(&mut self, _sha: &str, _body: &[u8]) -> Result<(), String> {
        Ok(())
    }
    pub fn has_script(&self, _sha: &str) -> bool {
        true
    }
    pub fn forget_scripts(&mut self) {}
    pub fn run_script(
        &mut self,
        _sha: &str,
        _k: &[&[u8]],
        _a: &[&[u8]],
        _h: &mut dyn Host,
        _o: &mut ReplyBuf,
    ) -> Result<(), Abort> {
        Ok(())
    }
    pub fn load_library(&mut self, _n: &str, _c: &str) -> Result<Vec<FunctionMeta>, String> {
        Ok(vec![])
    }
    pub fn clear_libraries(&mut self) {}
    pub fn run_function(
        &mut self,
        _n: &str,
        _k: &[&[u8]],
        _a: &[&[u8]],
        _h: &mut dyn Host,
        _o: &mut ReplyBuf,
    ) -> Result<(), Abort> {
        Ok(())
    }
    pub fn used_memory(&self) -> usize {
        0
    }
}
