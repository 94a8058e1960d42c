package broker

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	propfile "github.com/rmqha/rmqha/libs/props"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/sirupsen/logrus"
)

// GET_BROKER_CONFIG (26) and UPDATE_BROKER_CONFIG (25), as RocketMQ's AdminBrokerProcessor:
//
//	GET_BROKER_CONFIG     -> SUCCESS, body "key=value\n" for every key of the running
//	                         configuration (sorted; secrets and passwords "****", props.Dump's
//	                         rule, as GET_NAMESRV_CONFIG), ext version = the configuration's
//	                         DataVersion JSON {"counter":..,"stateVersion":0,"timestamp":..}
//	UPDATE_BROKER_CONFIG  body "key=value\n..." (Java Properties text)
//	                      -> SUCCESS: every key applied live, written to the -c file, version+1
//	                      -> NO_PERMISSION "Can not update config in black list." (RocketMQ's
//	                         brokerConfigPath, rocketmqHome, configBlackList), or naming the first
//	                         key that cannot change at runtime here; nothing changes
//	                      -> SYSTEM_ERROR for a body that is not properties, a bad value (naming
//	                         the key) or a config file that cannot be written; nothing changes
//
// RocketMQ applies every key of its config classes and ignores the rest; this broker changes
// only the keys of runtimeKeys, which every request handler reads live, and refuses the others
// rather than answering SUCCESS for a change it would not make.

// runtimeKey is one key of UPDATE_BROKER_CONFIG: how its live value follows a Config.
type runtimeKey struct {
	// store sets the live value from c.
	store func(l *liveConfig, c *Config)
	// load writes the live value into c.
	load func(l *liveConfig, c *Config)
	// text formats c's value (the persisted line and the log field).
	text func(c *Config) string
}

func boolKey(live func(*liveConfig) *atomic.Bool, field func(*Config) *bool) runtimeKey {
	return runtimeKey{
		store: func(l *liveConfig, c *Config) { live(l).Store(*field(c)) },
		load:  func(l *liveConfig, c *Config) { *field(c) = live(l).Load() },
		text:  func(c *Config) string { return strconv.FormatBool(*field(c)) },
	}
}

func int32Key(live func(*liveConfig) *atomic.Int32, field func(*Config) *int32) runtimeKey {
	return runtimeKey{
		store: func(l *liveConfig, c *Config) { live(l).Store(*field(c)) },
		load:  func(l *liveConfig, c *Config) { *field(c) = live(l).Load() },
		text:  func(c *Config) string { return strconv.FormatInt(int64(*field(c)), 10) },
	}
}

// runtimeKeys is the allow-list of UPDATE_BROKER_CONFIG: each key, its live value and its
// Config field.
var runtimeKeys = map[string]runtimeKey{
	"slaveReadEnable": boolKey(func(l *liveConfig) *atomic.Bool { return &l.slaveReadEnable }, func(c *Config) *bool { return &c.SlaveReadEnable }),
	"rejectTransactionMessage": boolKey(func(l *liveConfig) *atomic.Bool { return &l.rejectTransactionMessage },
		func(c *Config) *bool { return &c.RejectTransactionMessage }),
	"storeReplyMessageEnable": boolKey(func(l *liveConfig) *atomic.Bool { return &l.storeReplyMessageEnable },
		func(c *Config) *bool { return &c.StoreReplyMessageEnable }),
	"enablePropertyFilter": boolKey(func(l *liveConfig) *atomic.Bool { return &l.enablePropertyFilter }, func(c *Config) *bool { return &c.EnablePropertyFilter }),
	"filterSupportRetry":   boolKey(func(l *liveConfig) *atomic.Bool { return &l.filterSupportRetry }, func(c *Config) *bool { return &c.FilterSupportRetry }),
	"brokerPermission":     int32Key(func(l *liveConfig) *atomic.Int32 { return &l.brokerPermission }, func(c *Config) *int32 { return &c.BrokerPermission }),
}

// configBlackList are RocketMQ's keys UPDATE_BROKER_CONFIG never changes (its
// AdminBrokerProcessor answers NO_PERMISSION "Can not update config in black list.").
var configBlackList = map[string]bool{"brokerConfigPath": true, "rocketmqHome": true, "configBlackList": true}

// maxConfigFileSize bounds the config file read back for an update.
const maxConfigFileSize = 1 << 20

// RuntimeConfigKeys lists the keys UPDATE_BROKER_CONFIG changes, sorted.
func RuntimeConfigKeys() []string {
	keys := make([]string, 0, len(runtimeKeys))
	for k := range runtimeKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// liveConfig holds the keys an update changes while the broker runs (read without locks by
// the request handlers) and the configuration's DataVersion.
type liveConfig struct {
	slaveReadEnable, rejectTransactionMessage, storeReplyMessageEnable atomic.Bool
	enablePropertyFilter, filterSupportRetry                           atomic.Bool
	brokerPermission                                                   atomic.Int32
	// permStamp is when brokerPermission last changed (ms; start-up counts): the
	// registration's DataVersion while the permission masks the topics (permission.go).
	permStamp atomic.Int64

	// mu makes updates one at a time (file and memory change together).
	mu      sync.Mutex
	version atomic.Pointer[route.DataVersion]
}

func (l *liveConfig) init(c Config, v route.DataVersion) {
	for _, k := range runtimeKeys {
		k.store(l, &c)
	}
	l.version.Store(&v)
	l.permStamp.Store(v.Timestamp)
}

// overlay writes the live values into c.
func (l *liveConfig) overlay(c *Config) {
	for _, k := range runtimeKeys {
		k.load(l, c)
	}
}

func (b *Broker) handleGetBrokerConfig(w remoting.ResponseWriter, req *remoting.Command) {
	cfg := b.Config()
	dump := propfile.Dump(&cfg)
	keys := make([]string, 0, len(dump))
	for k := range dump {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var body bytes.Buffer
	for _, k := range keys {
		body.WriteString(k + "=" + dump[k] + "\n")
	}
	b.replyOK(w, req, body.Bytes(), "version", string(route.AppendDataVersion(nil, *b.live.version.Load())))
}

func (b *Broker) handleUpdateBrokerConfig(w remoting.ResponseWriter, req *remoting.Command) {
	entries, err := propfile.Parse(bytes.NewReader(req.Body), "body")
	if err != nil {
		b.reply(w, req, remoting.SystemError, "string2Properties error: "+err.Error())
		return
	}
	set := map[string]string{}
	next := b.Config()
	for _, e := range entries {
		if configBlackList[e.Key] {
			b.reply(w, req, remoting.NoPermission, "Can not update config in black list.")
			return
		}
		if _, ok := runtimeKeys[e.Key]; !ok {
			b.reply(w, req, remoting.NoPermission, fmt.Sprintf("Can not update config %s at runtime: this broker changes only %s",
				e.Key, strings.Join(RuntimeConfigKeys(), ", ")))
			return
		}
		if err := propfile.Set(&next, e.Key, e.Value, "request"); err != nil {
			b.reply(w, req, remoting.SystemError, err.Error())
			return
		}
		set[e.Key] = runtimeKeys[e.Key].text(&next)
	}
	if len(set) == 0 {
		b.replyOK(w, req, nil)
		return
	}
	if err := next.Validate(); err != nil {
		b.reply(w, req, remoting.SystemError, err.Error())
		return
	}
	l := &b.live
	l.mu.Lock()
	defer l.mu.Unlock()
	persisted := b.cfg.ConfigFile != ""
	if persisted {
		if err := b.persistConfig(set); err != nil {
			b.log.WithError(err).WithField("configFile", b.cfg.ConfigFile).Error("broker config update refused: config file not written")
			b.reply(w, req, remoting.SystemError, "config not changed: writing "+b.cfg.ConfigFile+": "+err.Error())
			return
		}
	}
	permBefore := l.brokerPermission.Load()
	for k := range set {
		runtimeKeys[k].store(l, &next)
	}
	v := l.version.Load().Next(b.now())
	l.version.Store(&v)
	fields := logrus.Fields{"peer": peerOf(w), "persisted": persisted, "version": v.Counter}
	for k, val := range set {
		fields[k] = val
	}
	b.log.WithFields(fields).Info("broker config updated at runtime")
	if l.brokerPermission.Load() != permBefore {
		l.permStamp.Store(max(b.now().UnixMilli(), l.permStamp.Load()+1))
		// Routes carry the permission: the name servers learn it now, not a period later.
		b.triggerRegister()
	}
	if !persisted {
		// Applied, and said so: a restart returns to the configuration it starts with.
		resp := remoting.NewResponse(req, remoting.Success, "applied; not persisted (the broker was started without -c)")
		_ = w.Write(resp)
		return
	}
	b.replyOK(w, req, nil)
}

func peerOf(w remoting.ResponseWriter) string {
	if c := w.Conn(); c != nil {
		return c.RemoteAddr()
	}
	return ""
}

// persistConfig writes set into the config file: its other lines kept, through a temporary
// file renamed over it, so that a crash leaves the old or the new file.
func (b *Broker) persistConfig(set map[string]string) error {
	fsys := b.cfg.ConfigFS
	if fsys == nil {
		fsys = vfs.Default
	}
	path := b.cfg.ConfigFile
	old, err := vfs.ReadFileLimit(fsys, path, maxConfigFileSize)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return vfs.WriteFileAtomic(fsys, path, propfile.Rewrite(old, set))
}
