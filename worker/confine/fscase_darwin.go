package confine

// On macOS every directory is taken to fold. APFS and HFS+ volumes are
// case-insensitive unless formatted otherwise (pathconf's
// _PC_CASE_SENSITIVE tells which), but even a case-sensitive one is not
// byte-exact: APFS matches names whatever their Unicode normalization, and
// HFS+ stores names decomposed (NFD) and decomposes the name looked up, so
// "café" written precomposed finds the entry "cafe\u0301". A name is
// therefore always checked against its directory's entries, and served
// only as the directory lists it.

// fsCaseMode classifies the filesystem holding fd: on macOS it may fold.
func fsCaseMode(int) (caseMode, error) { return caseFolds, nil }

// dirFolds reports whether lookups in the directory dirfd may fold: on
// macOS they may.
func dirFolds(int) (bool, error) { return true, nil }
