//! The stdio transport: rmcp's line transport over a child process whose output goes through
//! [`FrameGuard`], so that an answer over the size limit fails its call at once instead of
//! vanishing. rmcp's own child transport reads the child's output directly, so this one takes
//! its place and shuts the child down the same way.

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use crate::frames::FrameGuard;

/// How long a child may take to exit after its input is closed, and again after SIGTERM.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// A stdio MCP server's process and the transport over its stdin and stdout.
pub(crate) struct ChildTransport {
    /// `None` once it has exited or been killed.
    child: Option<Box<dyn ChildWrapper>>,
    transport: AsyncRwTransport<RoleClient, FrameGuard<ChildStdout>, ChildStdin>,
}

impl ChildTransport {
    /// Starts `command` with piped stdin, stdout and stderr; the stderr handle is returned for
    /// the caller to read.
    pub(crate) fn spawn(mut command: CommandWrap) -> std::io::Result<(Self, Option<ChildStderr>)> {
        command
            .command_mut()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let stdin = child.inner_mut().stdin().take();
        let stdout = child.inner_mut().stdout().take();
        let stderr = child.inner_mut().stderr().take();
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            return Err(std::io::Error::other(
                "the child's stdin or stdout was not piped",
            ));
        };
        let transport = ChildTransport {
            child: Some(child),
            transport: AsyncRwTransport::new(FrameGuard::new(stdout), stdin),
        };
        Ok((transport, stderr))
    }

    /// The child's process id, while it runs.
    pub(crate) fn id(&self) -> Option<u32> {
        self.child.as_ref()?.id()
    }

    /// Shuts the child down as the MCP spec says for stdio: close its input and wait, then
    /// SIGTERM and wait, then SIGKILL. The child stays in `self` until it is gone, so a
    /// shutdown cancelled midway still kills it on drop.
    async fn shutdown(&mut self) -> std::io::Result<()> {
        self.transport.close().await?;
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        if exited_within(child, EXIT_WAIT).await? {
            self.child = None;
            return Ok(());
        }
        #[cfg(unix)]
        match child.signal(libc::SIGTERM) {
            Ok(()) => {
                if exited_within(child, EXIT_WAIT).await? {
                    self.child = None;
                    return Ok(());
                }
            }
            Err(error) => tracing::warn!(%error, "could not send SIGTERM to an MCP server"),
        }
        let killed = Box::into_pin(child.kill()).await;
        self.child = None;
        killed
    }
}

/// Whether `child` exited within `wait`.
async fn exited_within(child: &mut Box<dyn ChildWrapper>, wait: Duration) -> std::io::Result<bool> {
    match tokio::time::timeout(wait, child.wait()).await {
        Ok(status) => status.map(|_| true),
        Err(_) => Ok(false),
    }
}

impl Drop for ChildTransport {
    fn drop(&mut self) {
        // Killing (the whole process group) is async; without a runtime, the command's
        // kill-on-drop still kills the child itself.
        if let (Some(mut child), Ok(runtime)) =
            (self.child.take(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(async move {
                if let Err(error) = Box::into_pin(child.kill()).await {
                    tracing::warn!(%error, "could not kill an MCP server");
                }
            });
        }
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.shutdown()
    }
}
