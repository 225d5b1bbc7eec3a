//! Starting a test's child process. Under Wine, CreateProcess now and then
//! fails with ERROR_INTERNAL_ERROR (1359) before the new process runs any
//! of its code; it was seen in the CLI's and the core's child-process
//! tests, on a loaded machine and on an idle one. Such a start is tried
//! again, a few times, and said on stderr; any other failure is returned
//! as it is. The CLI's tests include this file too.
#![allow(dead_code)]

use std::process::{Child, Command, Output, Stdio};

const ERROR_INTERNAL_ERROR: i32 = 1359;

/// `spawn` and `output` that try Wine's spurious failure again.
pub trait Retrying {
    /// [`Command::spawn`], tried again on Wine's spurious failure.
    fn spawn_retrying(&mut self) -> std::io::Result<Child>;
    /// [`Command::output`] (stdin null, stdout and stderr captured) over
    /// [`Retrying::spawn_retrying`].
    fn output_retrying(&mut self) -> std::io::Result<Output>;
}

impl Retrying for Command {
    fn spawn_retrying(&mut self) -> std::io::Result<Child> {
        let mut tries = 0;
        loop {
            match self.spawn() {
                Err(e) if cfg!(windows) && e.raw_os_error() == Some(ERROR_INTERNAL_ERROR) && tries < 4 => {
                    tries += 1;
                    eprintln!("starting {self:?} failed ({e}); trying again");
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
                r => return r,
            }
        }
    }

    fn output_retrying(&mut self) -> std::io::Result<Output> {
        self.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn_retrying()?.wait_with_output()
    }
}
