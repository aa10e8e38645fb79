// The "mujoco" engine's native part: MuJoCo's batch engine (mjbatch.h) behind typed XLA FFI handlers.
//
// A jitted program calls one handler per batched physics call. The handler writes the JAX state rows
// into a batch's state rows, runs the batch on its own threads (no Python, no GIL), and copies the
// results into one uint32 buffer laid out as gymjax.envs.mujoco.engine.contract.layout says. The JAX state stays
// the source of truth: a batch holds nothing between calls that a call does not write first, so
// stepping the same state twice gives the same result.
//
// Python finds the engine it registered (gymjax_register) by a key computed from everything the
// physics depends on (model bytes, frame skip, fields): a compiled program, cached on disk and run by
// another process, names an engine that process registered too, never a pointer. What crosses from
// Python is typed and crosses once: the output row's layout at registration (arrays of offsets, the
// fields by name, each resolved to its mjData member there), and each set of randomized fields a
// program uses (gymjax_register_fields, under a digest of its names and types, which a call names by
// a typed attribute). Nothing is parsed per call.

#include <mujoco/mjbatch.h>
#include <mujoco/mjxmacro.h>
#include <mujoco/mujoco.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// What gymjax's HostData.state holds: mjSTATE_FULLPHYSICS | mjSTATE_WARMSTART, bit by bit.
constexpr int kStateSpec = mjSTATE_FULLPHYSICS | mjSTATE_WARMSTART;
constexpr int kPostConstraint = 1;  // flags of gymjax_register
constexpr int kKinematicResets = 2;

struct Component {
  int ours;    // offset in gymjax's state vector (doubles)
  int theirs;  // offset in the batch's state row (doubles)
  int size;
};

using DataMember = mjtNum* mjData::*;

// `member` if it holds mjtNum, else null (an int or byte field cannot be copied as doubles).
template <typename M>
DataMember AsNumbers(M member) {
  if constexpr (std::is_same_v<M, DataMember>) {
    return member;
  } else {
    return nullptr;
  }
}

// The mjData member holding field `name` (an mjtNum array), or null: looked up once, at registration,
// so that copying a field out of a simulation is a member access, not a search by name.
DataMember DataField(const std::string& name) {
#define XNV X
#define X(type, field, nr, nc) \
  if (name == #field) return AsNumbers(&mjData::field);
  MJDATA_POINTERS
#undef X
#undef XNV
  return nullptr;
}

struct Part {  // a field copied out: where in the output row, and from which batch output
  std::string name;
  DataMember member;
  int start;     // in 32-bit words
  int size;      // numbers
  int residual;  // start of its float64 residual in words, -1 if none
  bool post;     // filled by mj_rnePostConstraint: zero after a reset
};

struct Field {  // a randomized MjModel field, as a registered field set names it
  std::string name;
  char type;  // 'd' double, 'f' float, 'i' int, 'b' byte
};
using FieldSet = std::vector<Field>;

// One mjBatch and what a call needs beside it. A call holds a slot alone.
struct Slot {
  mjBatch* batch = nullptr;
  int nsim = 0;
  bool single = false;  // runs on the caller's thread alone
  std::vector<int> ids;
  std::vector<const double*> outputs;  // per Part: the batch's copies after mjb_step
  std::vector<std::vector<double>> copies;  // per Part: the copies mjb_apply's functions make
  std::map<std::string, std::vector<unsigned char>> nominal;  // expanded fields: the model's values
  std::vector<double> blank;           // mj_resetData's state row
  int nrow = 0;
  std::vector<Component> components;
  int ctrl_at = 0;
};

struct Engine {
  mjModel* model = nullptr;
  int frame_skip = 1;
  int nthread = 0;
  bool post = false;
  bool kinematic_resets = false;
  int nstate = 0;  // of kStateSpec
  int words = 0;   // of an output row
  int state_start = 0, qpos_start = 0, qvel_start = 0, qpos_residual = -1;
  std::vector<Part> parts;
  std::vector<Component> ours;  // our components' offsets and sizes (theirs filled per slot)
  std::vector<int> bits;
  std::mutex mutex;
  std::vector<std::unique_ptr<Slot>> free;
  std::map<uint64_t, std::unique_ptr<FieldSet>> field_sets;  // by digest; never removed (programs name them)
  pid_t pid = 0;
  std::atomic<uint64_t> calls{0}, stepped{0}, reset{0};  // for tests and diagnostics (gymjax_stats)
};

std::mutex registry_mutex;
std::map<uint64_t, Engine*>& Registry() {
  static auto* engines = new std::map<uint64_t, Engine*>();  // never freed: handlers may outlive Python
  return *engines;
}

Engine* Find(uint64_t key) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = Registry().find(key);
  return it == Registry().end() ? nullptr : it->second;
}

std::unique_ptr<Slot> MakeSlot(Engine& e, int nsim, int nthread, std::string& error) {
  auto slot = std::make_unique<Slot>();
  mjBatchConfig config;
  mjb_defaultConfig(&config);
  config.nthread = nthread;
  char message[1024] = "";
  slot->batch = mjb_makeBatch(e.model, nsim, &config, message, sizeof(message));
  if (!slot->batch) {
    error = std::string("mjb_makeBatch failed: ") + message;
    return nullptr;
  }
  mjBatch* b = slot->batch;
  slot->nsim = nsim;
  slot->single = nthread == 1;
  slot->ids.resize(nsim);
  for (int i = 0; i < nsim; i++) slot->ids[i] = i;
  slot->nrow = mjb_nstate(b);
  const double* row0 = mjb_state(b);
  for (size_t k = 0; k < e.bits.size(); k++) {
    int size = 0;
    const double* at = mjb_stateComponent(b, e.bits[k], &size);
    slot->components.push_back({e.ours[k].ours, static_cast<int>(at - row0), e.ours[k].size});
  }
  int size = 0;
  slot->ctrl_at = static_cast<int>(mjb_stateComponent(b, mjSTATE_CTRL, &size) - row0);
  for (const Part& part : e.parts) {
    int n = 0, elemsize = 0;
    void* out = mjb_output(b, part.name.c_str(), &n, &elemsize);
    if (!out || n != part.size || elemsize != sizeof(double)) {
      error = "MjData field " + part.name + " cannot be copied out of MuJoCo's batch";
      mjb_deleteBatch(b);
      return nullptr;
    }
    slot->outputs.push_back(static_cast<const double*>(out));
    slot->copies.emplace_back(static_cast<size_t>(nsim) * part.size);
  }
  // A reset's row before qpos/qvel are written: what mj_resetData leaves.
  mjData* d = mj_makeData(e.model);
  mj_resetData(e.model, d);
  slot->blank.resize(slot->nrow);
  mj_getState(e.model, d, slot->blank.data(), mjSTATE_INTEGRATION);
  mj_deleteData(d);
  return slot;
}

// A slot of at least n simulations, held by the caller until Release.
std::unique_ptr<Slot> Acquire(Engine& e, int n, std::string& error) {
  // One env runs on the caller's thread alone: a hand-off to a pool costs more than its physics.
  int nthread = n == 1 ? 1 : e.nthread;
  {
    std::lock_guard<std::mutex> lock(e.mutex);
    if (e.pid != getpid()) {
      // A forked child: the parent's batch threads do not exist here. The slots are left, not freed
      // (freeing would wait on those threads); the child builds its own.
      for (auto& slot : e.free) slot.release();
      e.free.clear();
      e.pid = getpid();
    }
    for (size_t k = 0; k < e.free.size(); k++) {
      if (e.free[k]->nsim >= n && e.free[k]->single == (nthread == 1)) {
        auto slot = std::move(e.free[k]);
        e.free.erase(e.free.begin() + k);
        return slot;
      }
    }
  }
  return MakeSlot(e, n, nthread, error);
}

void Release(Engine& e, std::unique_ptr<Slot> slot) {
  std::lock_guard<std::mutex> lock(e.mutex);
  if (e.pid == getpid()) e.free.push_back(std::move(slot));
  else slot.release();
}

// Per-simulation work run by mjb_apply (a C function on the batch's threads).

// What a function run by mjb_apply needs; mjb_apply copies out no fields, so the function does.
struct ApplyArgs {
  const Engine* e;
  Slot* s;
  const float* qpos = nullptr;  // a reset's states, one row a simulation
  const float* qvel = nullptr;
};

void CopyFields(const ApplyArgs& a, const mjData* d, int sim) {
  for (size_t k = 0; k < a.e->parts.size(); k++) {
    const Part& p = a.e->parts[k];
    std::memcpy(a.s->copies[k].data() + static_cast<size_t>(sim) * p.size, d->*p.member, p.size * sizeof(double));
  }
}

// Gymnasium's do_simulation: frame_skip mj_steps, then mj_rnePostConstraint (cfrc_ext).
void StepWithPostConstraint(const mjModel* m, mjData* d, int sim, void* arg) {
  auto* a = static_cast<ApplyArgs*>(arg);
  for (int k = 0; k < a->e->frame_skip; k++) mj_step(m, d);
  mj_rnePostConstraint(m, d);
  CopyFields(*a, d, sim);
}

// Gymnasium's reset + set_state: reset the data, write qpos/qvel, forward.
void ResetForward(const mjModel* m, mjData* d, int sim, void* arg) {
  auto* a = static_cast<ApplyArgs*>(arg);
  mj_resetData(m, d);
  for (int j = 0; j < m->nq; j++) d->qpos[j] = a->qpos[static_cast<size_t>(sim) * m->nq + j];
  for (int j = 0; j < m->nv; j++) d->qvel[j] = a->qvel[static_cast<size_t>(sim) * m->nv + j];
  mj_forward(m, d);
  CopyFields(*a, d, sim);
}

// The same when nothing read depends on more than the kinematics: the row already holds the state.
void ResetKinematics(const mjModel* m, mjData* d, int sim, void* arg) {
  mj_kinematics(m, d);
  CopyFields(*static_cast<ApplyArgs*>(arg), d, sim);
}

template <typename T>
void WriteRows(void* storage, int size, int n, const float* values) {
  T* out = static_cast<T*>(storage);
  for (size_t k = 0; k < static_cast<size_t>(n) * size; k++) out[k] = static_cast<T>(values[k]);
}


// Writes this call's randomized fields (a registered set, null for none) into the first n simulations,
// and the nominal values of the fields an earlier call randomized and this one does not (a training and
// an evaluation env share an engine).
ffi::Error WriteFields(Slot& s, int n, const FieldSet* set, const ffi::RemainingArgs& values) {
  static const FieldSet kNone;
  const FieldSet& fields = set ? *set : kNone;
  if (fields.size() != values.size()) {
    return ffi::Error::InvalidArgument("randomized field names and values differ in number");
  }
  std::map<std::string, bool> now;
  for (size_t k = 0; k < fields.size(); k++) {
    const Field& f = fields[k];
    auto value = values.get<ffi::Buffer<ffi::F32>>(k);
    if (!value) return ffi::Error::InvalidArgument("randomized field " + f.name + " must be float32");
    int size = 0, elemsize = 0;
    void* storage = mjb_expand(s.batch, f.name.c_str(), &size, &elemsize);
    if (!storage) return ffi::Error::InvalidArgument("MuJoCo's batch cannot give " + f.name + " per simulation");
    if (static_cast<size_t>(size) * n != value->element_count()) {
      return ffi::Error::InvalidArgument("randomized field " + f.name + " has the wrong size");
    }
    if (!s.nominal.count(f.name)) {  // expand fills every simulation with the model's value
      auto* row = static_cast<unsigned char*>(storage);
      s.nominal[f.name].assign(row, row + static_cast<size_t>(size) * elemsize);
    }
    const float* v = value->typed_data();
    switch (f.type) {
      case 'd': WriteRows<double>(storage, size, n, v); break;
      case 'f': WriteRows<float>(storage, size, n, v); break;
      case 'i': WriteRows<int>(storage, size, n, v); break;
      case 'b': WriteRows<unsigned char>(storage, size, n, v); break;
      default: return ffi::Error::InvalidArgument("bad type of randomized field " + f.name);
    }
    now[f.name] = true;
  }
  for (const auto& [name, nominal] : s.nominal) {
    if (now.count(name)) continue;
    int size = 0, elemsize = 0;
    auto* storage = static_cast<unsigned char*>(mjb_expand(s.batch, name.c_str(), &size, &elemsize));
    for (int i = 0; i < n; i++) std::memcpy(storage + static_cast<size_t>(i) * nominal.size(), nominal.data(), nominal.size());
  }
  return ffi::Error::Success();
}

// MuJoCo's errors in some simulations: those kept their state; the call fails naming them all and the
// first one's message. The form is gymjax.envs.mujoco.engine.contract.SimulationError's, which reads
// the ids back from it: "gymjax.SimulationError: simulations [i, j] of n: <message>".
ffi::Error Failures(Slot& s, int nfail, const std::vector<int>& ids) {
  if (!nfail) return ffi::Error::Success();
  const int* status = mjb_status(s.batch);
  std::string which, first;
  for (int id : ids) {
    if (!status[id]) continue;
    if (first.empty()) first = std::string("simulation ") + std::to_string(id) + ": " + mjb_error(s.batch, id);
    which += (which.empty() ? "" : ", ") + std::to_string(id);
  }
  return ffi::Error::Internal("gymjax.SimulationError: simulations [" + which + "] of " + std::to_string(ids.size()) +
                              ": MuJoCo raised an error; " + (first.empty() ? "no message" : first));
}

// MuJoCo's warnings (an unstable simulation, a full contact buffer) that a call raises go out through
// mju_warning (gymjax routes it to MuJoCoWarning) naming the simulation. MuJoCo itself says a warning
// only when its counter is zero, without the simulation; so before a call every counter is set to 1
// with an impossible `lastinfo`, which MuJoCo changes when it warns (also when an unstable simulation
// resets its data, clearing every counter, and counts the warning again).
constexpr int kQuiet = -1234567;

void HushWarnings(Slot& s, const std::vector<int>& ids) {
  mjWarningStat* stats = mjb_warning(s.batch);
  for (int id : ids) {
    for (int k = 0; k < mjNWARNING; k++) stats[static_cast<size_t>(id) * mjNWARNING + k] = {kQuiet, 1};
  }
}

// One warning per kind a call raised: the simulations it names (the first few, and how many in
// all), with the first one's details.
void Warnings(Slot& s, const std::vector<int>& ids) {
  mjWarningStat* stats = mjb_warning(s.batch);
  for (int k = 0; k < mjNWARNING; k++) {
    std::vector<int> raised;
    int info = 0;
    for (int id : ids) {
      const mjWarningStat& w = stats[static_cast<size_t>(id) * mjNWARNING + k];
      if (w.number > 0 && (w.number != 1 || w.lastinfo != kQuiet)) {
        if (raised.empty()) info = w.lastinfo;
        raised.push_back(id);
      }
    }
    if (raised.empty()) continue;
    std::string which = raised.size() == 1 ? "simulation " : "simulations ";
    for (size_t j = 0; j < raised.size() && j < 5; j++) which += (j ? ", " : "") + std::to_string(raised[j]);
    if (raised.size() > 5) which += " and " + std::to_string(raised.size() - 5) + " more";
    std::string text = which + " of " + std::to_string(ids.size()) + ": " + mju_warningText(k, info);
    mju_warning(text.c_str());
  }
}

// Copies simulation i's results into output row `row` (see gymjax.envs.mujoco.engine.contract.layout).
// `zero_post`: the post-constraint fields are zero, as mj_resetData leaves them where the reset ran the
// kinematics alone; after a full reset they are copied, since mj_forward fills them for acceleration sensors.
void Output(const Engine& e, const Slot& s, int i, uint32_t* out, bool zero_post, bool applied) {
  const double* state = mjb_state(s.batch) + static_cast<size_t>(i) * s.nrow;
  double* ours = reinterpret_cast<double*>(out + e.state_start);
  for (const Component& c : s.components) std::memcpy(ours + c.ours, state + c.theirs, c.size * sizeof(double));
  float* f = reinterpret_cast<float*>(out);
  const double* qpos = state + s.components[1].theirs;
  const double* qvel = state + s.components[2].theirs;
  for (int j = 0; j < e.model->nq; j++) f[e.qpos_start + j] = static_cast<float>(qpos[j]);
  for (int j = 0; j < e.model->nv; j++) f[e.qvel_start + j] = static_cast<float>(qvel[j]);
  if (e.qpos_residual >= 0) {
    for (int j = 0; j < e.model->nq; j++) f[e.qpos_residual + j] = static_cast<float>(qpos[j] - f[e.qpos_start + j]);
  }
  for (size_t k = 0; k < e.parts.size(); k++) {
    const Part& p = e.parts[k];
    const double* from = (applied ? s.copies[k].data() : s.outputs[k]) + static_cast<size_t>(i) * p.size;
    bool zero = zero_post && p.post;
    for (int j = 0; j < p.size; j++) f[p.start + j] = zero ? 0.0f : static_cast<float>(from[j]);
    if (p.residual >= 0) {
      for (int j = 0; j < p.size; j++) f[p.residual + j] = zero ? 0.0f : static_cast<float>(from[j] - f[p.start + j]);
    }
  }
}

// MuJoCo times every stage of every mj_step through the process-wide mjcb_time, which MuJoCo's Python
// bindings set when imported: for a small model the clock reads cost a fifth to half of the physics
// (InvertedDoublePendulum and InvertedPendulum, profiled; EnvPool's own MuJoCo runs without them). No
// one reads the timers of the engine's data, so while any call runs the callback is paused (a count:
// calls on several threads overlap), and the last call to end puts back what the first found, unless
// the callback was set again meanwhile. A simulation the user steps on another thread at that moment
// records no stage times: the one effect outside the engine (docs/design.md).
class TimersPaused {
 public:
  TimersPaused() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (users_++ == 0) {
      saved_ = mjcb_time;
      mjcb_time = nullptr;
    }
  }
  ~TimersPaused() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--users_ == 0 && mjcb_time == nullptr) mjcb_time = saved_;
  }
  TimersPaused(const TimersPaused&) = delete;
  TimersPaused& operator=(const TimersPaused&) = delete;

 private:
  static inline std::mutex mutex_;
  static inline int users_ = 0;
  static inline mjfTime saved_ = nullptr;
};

// One batched call. `state`/`ctrl`: the rows to step (null: none); `reset`: which rows reset instead
// (null: none, or all when state is null); `qpos`/`qvel`: the resets' states.
ffi::Error Call(Engine* e, uint64_t fields, int64_t n, const uint32_t* state, const float* ctrl,
                const bool* reset, const float* qpos, const float* qvel, const ffi::RemainingArgs& values,
                uint32_t* out) {
  if (n == 0) return ffi::Error::Success();
  if (n > (1 << 30)) return ffi::Error::InvalidArgument("too many simulations in one call");
  std::string error;
  std::unique_ptr<Slot> slot = Acquire(*e, static_cast<int>(n), error);
  if (!slot) return ffi::Error::Internal(error);
  Slot& s = *slot;
  int count = static_cast<int>(n);
  mjModel* m = e->model;
  const FieldSet* set = nullptr;
  if (fields) {
    std::lock_guard<std::mutex> lock(e->mutex);
    auto it = e->field_sets.find(fields);
    if (it != e->field_sets.end()) set = it->second.get();
  }
  ffi::Error status = fields && !set ? ffi::Error::Internal("gymjax: randomized field set " + std::to_string(fields) +
                                                            " is not registered in this process")
                                     : WriteFields(s, count, set, values);
  // Each row steps, resets, or (a masked reset without a state) is left out, its output zero.
  std::vector<int> stepping, resetting;
  for (int i = 0; i < count; i++) {
    bool r = reset != nullptr ? reset[i] : state == nullptr;
    if (r) resetting.push_back(i);
    else if (state != nullptr) stepping.push_back(i);
  }
  HushWarnings(s, stepping);
  HushWarnings(s, resetting);
  e->calls++;
  e->stepped += stepping.size();
  e->reset += resetting.size();
  int nfail = 0;
  TimersPaused paused;
  if (status.success() && !stepping.empty()) {
    for (int i : stepping) {
      double* row = mjb_state(s.batch) + static_cast<size_t>(i) * s.nrow;
      std::memcpy(row, s.blank.data(), s.nrow * sizeof(double));
      const double* ours = reinterpret_cast<const double*>(state + static_cast<size_t>(i) * 2 * e->nstate);
      for (const Component& c : s.components) std::memcpy(row + c.theirs, ours + c.ours, c.size * sizeof(double));
      for (int j = 0; j < m->nu; j++) row[s.ctrl_at + j] = ctrl[static_cast<size_t>(i) * m->nu + j];
    }
    const int* ids = static_cast<int>(stepping.size()) == s.nsim ? nullptr : stepping.data();
    if (e->post) {
      ApplyArgs args{e, &s};
      nfail += mjb_apply(s.batch, ids, stepping.size(), StepWithPostConstraint, &args, 1);
    } else {
      nfail += mjb_step(s.batch, ids, stepping.size(), e->frame_skip, mjSTAGE_NONE);
    }
  }
  // mj_resetData puts mocap bodies where the (maybe randomized) model says: that case, like
  // sensors and plugins, keeps the full sequence.
  const bool kinematics = e->kinematic_resets && !m->nsensor && !m->nplugin && !(m->nmocap && !s.nominal.empty());
  if (status.success() && !resetting.empty()) {
    const int* ids = static_cast<int>(resetting.size()) == s.nsim ? nullptr : resetting.data();
    if (kinematics) {
      for (int i : resetting) {
        double* row = mjb_state(s.batch) + static_cast<size_t>(i) * s.nrow;
        std::memcpy(row, s.blank.data(), s.nrow * sizeof(double));
        for (int j = 0; j < m->nq; j++) row[s.components[1].theirs + j] = qpos[static_cast<size_t>(i) * m->nq + j];
        for (int j = 0; j < m->nv; j++) row[s.components[2].theirs + j] = qvel[static_cast<size_t>(i) * m->nv + j];
      }
      ApplyArgs args{e, &s};
      nfail += mjb_apply(s.batch, ids, resetting.size(), ResetKinematics, &args, 0);
    } else {
      ApplyArgs args{e, &s, qpos, qvel};
      nfail += mjb_apply(s.batch, ids, resetting.size(), ResetForward, &args, 1);
    }
  }
  if (status.success()) {
    std::vector<int> ran(stepping);
    ran.insert(ran.end(), resetting.begin(), resetting.end());
    status = Failures(s, nfail, ran);
    Warnings(s, ran);
  }
  if (status.success()) {
    if (static_cast<int>(stepping.size() + resetting.size()) < count) {
      std::memset(out, 0, static_cast<size_t>(count) * e->words * sizeof(uint32_t));
    }
    for (int i : stepping) Output(*e, s, i, out + static_cast<size_t>(i) * e->words, false, e->post);
    for (int i : resetting) Output(*e, s, i, out + static_cast<size_t>(i) * e->words, kinematics, true);
  }
  Release(*e, std::move(slot));
  return status;
}

int64_t Rows(const ffi::AnyBuffer::Dimensions& dims, int64_t width) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  return width ? total / width : 0;
}

ffi::Error Unregistered(uint64_t key) {
  return ffi::Error::Internal("gymjax: MuJoCo engine " + std::to_string(key) + " is not registered in this process");
}

// The four handlers: which rows a call steps or resets (see Call), the batch's size read off the
// input whose rows are one env each.

ffi::Error Init(uint64_t key, uint64_t fields, ffi::Buffer<ffi::F32> qpos, ffi::Buffer<ffi::F32> qvel,
                ffi::RemainingArgs values, ffi::Result<ffi::Buffer<ffi::U32>> out) {
  Engine* e = Find(key);
  if (!e) return Unregistered(key);
  return Call(e, fields, Rows(qpos.dimensions(), e->model->nq), nullptr, nullptr, nullptr, qpos.typed_data(),
              qvel.typed_data(), values, out->typed_data());
}

ffi::Error Step(uint64_t key, uint64_t fields, ffi::Buffer<ffi::U32> state, ffi::Buffer<ffi::F32> ctrl,
                ffi::RemainingArgs values, ffi::Result<ffi::Buffer<ffi::U32>> out) {
  Engine* e = Find(key);
  if (!e) return Unregistered(key);
  return Call(e, fields, Rows(state.dimensions(), 2 * e->nstate), state.typed_data(), ctrl.typed_data(), nullptr,
              nullptr, nullptr, values, out->typed_data());
}

ffi::Error InitWhere(uint64_t key, uint64_t fields, ffi::Buffer<ffi::PRED> reset, ffi::Buffer<ffi::F32> qpos,
                     ffi::Buffer<ffi::F32> qvel, ffi::RemainingArgs values, ffi::Result<ffi::Buffer<ffi::U32>> out) {
  Engine* e = Find(key);
  if (!e) return Unregistered(key);
  return Call(e, fields, Rows(qpos.dimensions(), e->model->nq), nullptr, nullptr, reset.typed_data(),
              qpos.typed_data(), qvel.typed_data(), values, out->typed_data());
}

ffi::Error StepOrReset(uint64_t key, uint64_t fields, ffi::Buffer<ffi::U32> state, ffi::Buffer<ffi::F32> ctrl,
                       ffi::Buffer<ffi::PRED> reset, ffi::Buffer<ffi::F32> qpos, ffi::Buffer<ffi::F32> qvel,
                       ffi::RemainingArgs values, ffi::Result<ffi::Buffer<ffi::U32>> out) {
  Engine* e = Find(key);
  if (!e) return Unregistered(key);
  return Call(e, fields, Rows(state.dimensions(), 2 * e->nstate), state.typed_data(), ctrl.typed_data(),
              reset.typed_data(), qpos.typed_data(), qvel.typed_data(), values, out->typed_data());
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(GymjaxMujocoInit, Init,
                              ffi::Ffi::Bind()
                                  .Attr<uint64_t>("engine")
                                  .Attr<uint64_t>("fields")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .RemainingArgs()
                                  .Ret<ffi::Buffer<ffi::U32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(GymjaxMujocoInitWhere, InitWhere,
                              ffi::Ffi::Bind()
                                  .Attr<uint64_t>("engine")
                                  .Attr<uint64_t>("fields")
                                  .Arg<ffi::Buffer<ffi::PRED>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .RemainingArgs()
                                  .Ret<ffi::Buffer<ffi::U32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(GymjaxMujocoStep, Step,
                              ffi::Ffi::Bind()
                                  .Attr<uint64_t>("engine")
                                  .Attr<uint64_t>("fields")
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .RemainingArgs()
                                  .Ret<ffi::Buffer<ffi::U32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(GymjaxMujocoStepOrReset, StepOrReset,
                              ffi::Ffi::Bind()
                                  .Attr<uint64_t>("engine")
                                  .Attr<uint64_t>("fields")
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::PRED>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .RemainingArgs()
                                  .Ret<ffi::Buffer<ffi::U32>>());

// Registers an engine under `key` (a no-op when one is): a copy of the model, and where each part of an
// output row lies (gymjax.envs.mujoco.engine.contract.layout), as `nparts` rows of `layout`, each
// {start, size, residual, post} in 32-bit words (size in numbers; residual -1 where none; post 1 for a
// field mj_rnePostConstraint fills, zero after a reset). Rows 0, 1 and 2 are the state, qpos and qvel;
// row k >= 3 is the mjData field `fields[k - 3]`, resolved here to its member. Returns 0, or -1 with a
// message in `error`.
extern "C" int gymjax_register(uint64_t key, const mjModel* model, int frame_skip, int nthread, int flags,
                               int nparts, const int32_t* layout, const char* const* fields, char* error,
                               int error_size) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  if (Registry().count(key)) return 0;
  if (nparts < 3) {
    std::snprintf(error, error_size, "a layout has the state, qpos and qvel first; got %d parts", nparts);
    return -1;
  }
  auto e = std::make_unique<Engine>();
  e->model = mj_copyModel(nullptr, model);
  if (!e->model) {
    std::snprintf(error, error_size, "mj_copyModel failed");
    return -1;
  }
  e->frame_skip = frame_skip;
  e->nthread = nthread;
  e->post = flags & kPostConstraint;
  e->kinematic_resets = flags & kKinematicResets;
  e->nstate = mj_stateSize(e->model, kStateSpec);
  e->pid = getpid();
  // Our state components, in the order of their bits (mj_getState's order).
  for (int bit = 1; bit < (1 << mjNSTATE); bit <<= 1) {
    if (!(kStateSpec & bit)) continue;
    int before = kStateSpec & (bit - 1);
    int size = mj_stateSize(e->model, bit);
    e->bits.push_back(bit);
    e->ours.push_back({before ? mj_stateSize(e->model, before) : 0, 0, size});
  }
  // Output() reads qpos and qvel as components 1 and 2: TIME, QPOS, QVEL are the first three bits.
  if (e->bits.size() < 3 || e->bits[0] != mjSTATE_TIME || e->bits[1] != mjSTATE_QPOS || e->bits[2] != mjSTATE_QVEL) {
    std::snprintf(error, error_size, "unexpected state layout");
    return -1;
  }
  const int32_t* state = layout;
  const int32_t* qpos = layout + 4;
  const int32_t* qvel = layout + 8;
  if (state[1] != 2 * e->nstate || qpos[1] != e->model->nq || qvel[1] != e->model->nv) {
    std::snprintf(error, error_size, "the layout's state, qpos or qvel size is not the model's");
    return -1;
  }
  e->state_start = state[0];
  e->qpos_start = qpos[0];
  e->qpos_residual = qpos[2];
  e->qvel_start = qvel[0];
  int words = 0;
  for (int k = 0; k < nparts; k++) {
    const int32_t* row = layout + 4 * k;
    int at = row[0], size = row[1], residual = row[2];
    if (k >= 3) {
      std::string name(fields[k - 3]);
      DataMember member = DataField(name);
      if (!member) {
        std::snprintf(error, error_size, "%s is not an mjtNum array of mjData", name.c_str());
        return -1;
      }
      e->parts.push_back({name, member, at, size, residual, row[3] != 0});
    }
    words = std::max(words, at + size);
    if (residual >= 0) words = std::max(words, residual + size);
  }
  e->words = words;
  Registry()[key] = e.release();
  return 0;
}

// Registers a set of randomized MjModel fields with engine `key` under `set` (a digest of the names
// and types, nonzero; a no-op when registered): `n` names, and `types`, one character each ('d'
// double, 'f' float, 'i' int, 'b' byte: the MjModel field's). A call names the set by its digest.
// Returns 0, or -1 with a message in `error`.
extern "C" int gymjax_register_fields(uint64_t key, uint64_t set, int n, const char* const* names,
                                      const char* types, char* error, int error_size) {
  Engine* e = Find(key);
  if (!e) {
    std::snprintf(error, error_size, "MuJoCo engine %llu is not registered", static_cast<unsigned long long>(key));
    return -1;
  }
  auto fields = std::make_unique<FieldSet>();
  for (int k = 0; k < n; k++) {
    if (!std::strchr("dfib", types[k]) || !types[k]) {
      std::snprintf(error, error_size, "field %s: type must be one of d, f, i, b", names[k]);
      return -1;
    }
    fields->push_back({names[k], types[k]});
  }
  std::lock_guard<std::mutex> lock(e->mutex);
  if (!e->field_sets.count(set)) e->field_sets[set] = std::move(fields);
  return 0;
}

// The number of output words of a registered engine's row, or -1: a check that both sides agree.
extern "C" int gymjax_words(uint64_t key) {
  Engine* e = Find(key);
  return e ? e->words : -1;
}

// What a registered engine has run: calls, simulations stepped, simulations reset; 0 if it is not.
extern "C" int gymjax_stats(uint64_t key, uint64_t* out) {
  Engine* e = Find(key);
  if (!e) return -1;
  out[0] = e->calls;
  out[1] = e->stepped;
  out[2] = e->reset;
  return 0;
}
