package confine

// renameExchange is not available on FreeBSD, which has no exchanging
// rename: every write takes the plain way (see replace).
func renameExchange(int, string, string) error { return errNoRenameFlags }

// renameNoReplace is not available on FreeBSD either.
func renameNoReplace(int, string, string) error { return errNoRenameFlags }
