use thiserror::Error;

/// Everything that can go wrong setting up or running a simulation. Every message names the
/// file, key or field and says what was expected.
#[derive(Debug, Error)]
pub enum SimError {
    /// A bad experiment file or override: `where` is "file: key" or similar.
    #[error("{at}: {msg}")]
    Config { at: String, msg: String },
    #[error("{0}")]
    Policy(#[from] tierkit_core::Error),
    #[error("{0}")]
    Capacity(String),
    #[error("{0}")]
    Io(String),
    #[error("interrupted")]
    Interrupted,
}

impl SimError {
    pub fn config(at: impl Into<String>, msg: impl Into<String>) -> Self {
        SimError::Config {
            at: at.into(),
            msg: msg.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, SimError>;
