package wire

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"strconv"
	"syscall"
	"time"
)

// The gRPC connection go-plugin makes to a worker runs over a Unix socket,
// which has a path, so it is mutual TLS: the supervisor talks only to the
// worker it started, and the worker answers only that supervisor. The
// supervisor makes both sides' keys and certificates for each start (ECDSA
// P-256, self-signed, each side trusting only the other's certificate) and
// hands the worker its own and the supervisor's certificate through an
// unnamed pipe at descriptor KeysFD, never through its environment or
// arguments, which other processes of the user can read. go-plugin's
// AutoMTLS is not used: it makes a P-521 key and certificate on each
// side, and those with the handshake over them cost more than the rest of
// a worker's start (docs/performance.md, Start-up).

// KeysEnv names the environment variable by which the supervisor tells a
// worker the descriptor of its TLS keys.
const KeysEnv = "FSMCP_WORKER_KEYS_FD"

// KeysFD is the worker's descriptor of the pipe holding its TLS keys: the
// third of exec.Cmd.ExtraFiles, after the call channel's two.
const KeysFD = CallsOutFD + 1

// keysHost is the name both certificates carry, and the name the
// supervisor checks: go-plugin's dialer reaches the worker by its socket's
// path, not a host name.
const keysHost = "localhost"

// maxKeys bounds what the worker reads at KeysFD. The keys take about
// 1.5 KB; a pipe holds at least one 4 KiB page, so the supervisor writes
// them whole before the worker starts.
const maxKeys = 4 << 10

var keysEnvValue = strconv.Itoa(KeysFD)

// KeysEnvValue is the KeysEnv entry for a worker's environment.
func KeysEnvValue() string { return KeysEnv + "=" + keysEnvValue }

// Keys are the TLS keys of one worker start: Client is the supervisor's
// side of the connection (go-plugin's ClientConfig.TLSConfig); the
// worker's side goes to it through Pipe.
type Keys struct {
	Client *tls.Config
	worker []byte // PEM: the worker's certificate and key, then the supervisor's certificate
}

// NewKeys makes the keys for one worker start.
func NewKeys() (*Keys, error) {
	sup, supPEM, _, err := newCert()
	if err != nil {
		return nil, err
	}
	wrk, wrkPEM, keyPEM, err := newCert()
	if err != nil {
		return nil, err
	}
	trusted := x509.NewCertPool()
	trusted.AddCert(wrk.Leaf)
	client := &tls.Config{
		Certificates: []tls.Certificate{sup},
		RootCAs:      trusted,
		ServerName:   keysHost,
		MinVersion:   tls.VersionTLS13,
	}
	worker := append(append(wrkPEM, keyPEM...), supPEM...)
	return &Keys{Client: client, worker: worker}, nil
}

// newCert makes a P-256 key and a self-signed certificate for it, good for
// either side of a connection: the certificate parsed, and PEM of the
// certificate and of the key.
func newCert() (cert tls.Certificate, certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("wire: TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("wire: TLS certificate serial: %w", err)
	}
	now := time.Now()
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: keysHost, Organization: []string{"fsmcp"}},
		DNSNames:              []string{keysHost},
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SerialNumber:          serial,
		// The certificates are checked once, at the handshake a moment
		// later; an hour either side leaves room for a clock that is
		// stepped meanwhile.
		NotBefore: now.Add(-time.Hour),
		NotAfter:  now.Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("wire: TLS certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("wire: TLS certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("wire: TLS key: %w", err)
	}
	cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return cert, certPEM, keyPEM, nil
}

// Pipe returns the read end of a new pipe that holds the worker's keys,
// for exec.Cmd.ExtraFiles at KeysFD (with KeysEnvValue in the
// environment). The caller closes it once the worker has started.
func (k *Keys) Pipe() (*os.File, error) {
	if len(k.worker) > maxKeys {
		return nil, fmt.Errorf("wire: TLS keys of %d bytes, more than the %d a worker reads", len(k.worker), maxKeys)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("wire: TLS keys pipe: %w", err)
	}
	_, err = w.Write(k.worker)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("wire: TLS keys pipe: %w", err)
	}
	return r, nil
}

// serverTLS is the worker's side of the connection, made from the keys the
// supervisor passed at KeysFD. A worker launched without them is refused:
// go-plugin would otherwise serve its socket in the clear.
func serverTLS() (*tls.Config, error) {
	v, set := os.LookupEnv(KeysEnv)
	if !set {
		return nil, fmt.Errorf("wire: launched without TLS keys (no %s in the environment)", KeysEnv)
	}
	if v != keysEnvValue {
		return nil, fmt.Errorf("wire: %s=%q: want %q", KeysEnv, v, keysEnvValue)
	}
	if err := checkPipeEnd("TLS keys", KeysFD, syscall.O_RDONLY); err != nil {
		return nil, err
	}
	f := os.NewFile(KeysFD, "fsmcp-keys")
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeys+1))
	if err != nil {
		return nil, fmt.Errorf("wire: TLS keys: %w", err)
	}
	if len(data) > maxKeys {
		return nil, fmt.Errorf("wire: TLS keys longer than %d bytes", maxKeys)
	}
	return parseServerKeys(data)
}

// parseServerKeys reads the worker's certificate and key and the
// supervisor's certificate, in that order, and makes the worker's side.
func parseServerKeys(data []byte) (*tls.Config, error) {
	var blocks [3]*pem.Block
	for i, want := range []string{"CERTIFICATE", "EC PRIVATE KEY", "CERTIFICATE"} {
		blocks[i], data = pem.Decode(data)
		if blocks[i] == nil || blocks[i].Type != want {
			return nil, errors.New("wire: TLS keys are not the worker's certificate and key and the supervisor's certificate")
		}
	}
	cert, err := tls.X509KeyPair(pem.EncodeToMemory(blocks[0]), pem.EncodeToMemory(blocks[1]))
	if err != nil {
		return nil, fmt.Errorf("wire: TLS keys: %w", err)
	}
	sup, err := x509.ParseCertificate(blocks[2].Bytes)
	if err != nil {
		return nil, fmt.Errorf("wire: TLS keys: the supervisor's certificate: %w", err)
	}
	trusted := x509.NewCertPool()
	trusted.AddCert(sup)
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    trusted,
		MinVersion:   tls.VersionTLS13,
	}, nil
}
