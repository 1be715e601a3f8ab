//! The process environment of a command in a prepared checkout: the checkout's own
//! installation first, nothing of the user's active environment.
