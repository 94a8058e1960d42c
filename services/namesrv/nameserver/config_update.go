package nameserver

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/props"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
)

// UPDATE_NAMESRV_CONFIG (318), RocketMQ's DefaultRequestProcessor.updateConfig: the body is
// properties text ("key=value\n"); RocketMQ refuses a key of its configBlackList
// (configBlackList, configStorePath, kvConfigPath) with NO_PERMISSION "Can not update config
// in black list.", sets the others on its configuration objects and writes them into its
// configStorePath, which NamesrvStartup points at the -c file. Most of those keys (listenPort,
// the Netty settings) are read only at start, so the change takes effect at the next start.
//
// Here, in the same way:
//
//   - the black list is RocketMQ's plus the keys that decide who may register and administer
//     and how the ports are secured (registration secret, ACL, TLS, the registry backend):
//     NO_PERMISSION with RocketMQ's remark;
//   - a key with no field here (a RocketMQ key with no meaning here, or a typo) is refused
//     with SYSTEM_ERROR naming it, never accepted and dropped;
//   - the new configuration is validated as at start (SYSTEM_ERROR with the reason);
//   - without a config file (-c) there is nowhere to persist: SYSTEM_ERROR saying so;
//   - otherwise the file is rewritten atomically (props.Rewrite; write-temp, fsync, rename,
//     fsync the folder), logLevel applies at once, and every other key at the next start. The
//     answer's remark says which is which; GET_NAMESRV_CONFIG shows the running values.
//
// Who may send it: like GET_NAMESRV_CONFIG (adminGuard, or an ACL admin account).

// rocketMQConfigBlackList is NamesrvConfig.configBlackList's default.
var rocketMQConfigBlackList = []string{"configBlackList", "configStorePath", "kvConfigPath"}

// protectedKeys may not be changed remotely: they decide who may register and administer,
// and how the ports are secured.
var protectedKeys = map[string]bool{
	"registrationSecret": true, "registrationSecretFile": true, "registrationAllowUnauthenticated": true,
	"aclEnable": true, "aclPlainFile": true, "registryBackend": true, "httpTlsEnable": true,
}

// liveKeys apply to the running name server at once.
var liveKeys = map[string]bool{"logLevel": true}

// blackListed reports whether UPDATE_NAMESRV_CONFIG may not change key.
func blackListed(key string) bool {
	for _, k := range rocketMQConfigBlackList {
		if k == key {
			return true
		}
	}
	return protectedKeys[key] || strings.HasPrefix(key, "tls.")
}

// configUpdates serialises UPDATE_NAMESRV_CONFIG and holds the live values it applied.
type configUpdates struct {
	mu       sync.Mutex
	logLevel string // "" until changed
}

// updateNamesrvConfig answers UPDATE_NAMESRV_CONFIG.
func (s *Server) updateNamesrvConfig(w remoting.ResponseWriter, req *remoting.Command) {
	if len(req.Body) == 0 {
		reply(w, req, remoting.Success, "", nil)
		return
	}
	entries, err := props.Parse(bytes.NewReader(req.Body), "UPDATE_NAMESRV_CONFIG body")
	if err != nil {
		reply(w, req, remoting.SystemError, "string2Properties error", nil)
		return
	}
	set := map[string]string{}
	for _, e := range entries {
		if blackListed(e.Key) {
			reply(w, req, remoting.NoPermission, "Can not update config in black list.", nil)
			return
		}
		set[e.Key] = e.Value
	}
	bound := map[string]bool{}
	for _, k := range props.Keys(&s.cfg) {
		bound[k] = true
	}
	var unknown []string
	for k := range set {
		if !bound[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		reply(w, req, remoting.SystemError, fmt.Sprintf("keys with no meaning on this name server, not updated: %s", strings.Join(unknown, ",")), nil)
		return
	}
	if s.cfg.ConfigFile == "" {
		reply(w, req, remoting.SystemError, "this name server was started without a config file (-c): an update has nowhere to be persisted, nothing changed; start it with -c FILE to update its configuration", nil)
		return
	}

	s.updates.mu.Lock()
	defer s.updates.mu.Unlock()
	next := s.cfg
	if s.updates.logLevel != "" {
		next.LogLevel = s.updates.logLevel
	}
	for k, v := range set {
		if err := props.Set(&next, k, v, "UPDATE_NAMESRV_CONFIG"); err != nil {
			reply(w, req, remoting.SystemError, err.Error(), nil)
			return
		}
	}
	if err := next.Validate(); err != nil {
		reply(w, req, remoting.SystemError, err.Error(), nil)
		return
	}
	if err := s.persistConfig(set); err != nil {
		s.log.WithError(err).WithField("file", s.cfg.ConfigFile).Error("UPDATE_NAMESRV_CONFIG: config file not written")
		reply(w, req, remoting.SystemError, "config file not written, nothing changed: "+err.Error(), nil)
		return
	}
	var now, later []string
	for _, k := range sortedKeysOf(set) {
		if liveKeys[k] && (k != "logLevel" || s.cfg.SetLogLevel != nil) {
			now = append(now, k)
		} else {
			later = append(later, k)
		}
	}
	if v, ok := set["logLevel"]; ok && s.cfg.SetLogLevel != nil {
		if err := s.cfg.SetLogLevel(v); err == nil {
			s.updates.logLevel = v
		}
	}
	s.m.adminChanges.WithLabelValues(remoting.RequestName(req.Code)).Inc()
	s.log.WithFields(logrus.Fields{"file": s.cfg.ConfigFile, "appliedNow": strings.Join(now, ","), "atNextStart": strings.Join(later, ",")}).
		Info("configuration updated (UPDATE_NAMESRV_CONFIG)")
	remark := "written to " + s.cfg.ConfigFile
	if len(now) > 0 {
		remark += "; applied now: " + strings.Join(now, ",")
	}
	if len(later) > 0 {
		remark += "; applied at the next start: " + strings.Join(later, ",")
	}
	reply(w, req, remoting.Success, remark, nil)
}

// persistConfig rewrites the config file with set: write a temporary file beside it, fsync,
// rename over it, fsync the folder.
func (s *Server) persistConfig(set map[string]string) error {
	fsys := s.cfg.ConfigFS
	if fsys == nil {
		fsys = vfs.Default
	}
	path := s.cfg.ConfigFile
	src, err := vfs.ReadFileLimit(fsys, path, maxConfigFileSize)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return vfs.WriteFileAtomic(fsys, path, props.Rewrite(src, set))
}

// maxConfigFileSize bounds the config file an update reads back.
const maxConfigFileSize = 4 << 20
