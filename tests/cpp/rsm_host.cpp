// A small C++ host of librsm: RAII wrappers over the C handles (a store, a stream, a segment list, errors
// as exceptions) and the round trip a broker makes on the filesystem store: copy every closed segment of
// the fixture's partition, fetch ranges and every index and compare them with the files, delete.
// Linked against librsm.a (rsm::rsm_static), so the static library is proven too.
//
// usage: rsm_host FIXTURE_DIR WORK_DIR
#include <rsm.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rsm {

// A failed call: its code and the library's message.
class Error : public std::runtime_error {
 public:
  Error(rsm_result code, const std::string &what) : std::runtime_error(what), code_(code) {}
  rsm_result code() const { return code_; }

 private:
  rsm_result code_;
};

// Throws when `r` is not OK; takes ownership of `err` either way. Call the C function first and pass its
// result: in one expression `check(rsm_x(..., &err), err)` C++ may read `err` before the call writes it.
inline void check(rsm_result r, rsm_error *err, const char *call) {
  std::unique_ptr<rsm_error, decltype(&rsm_error_free)> owned(err, &rsm_error_free);
  if (r != RSM_RESULT_OK) throw Error(r, std::string(call) + ": " + rsm_error_message(err));
}

// A read of a segment range or an index; closed when it goes out of scope.
class Stream {
 public:
  explicit Stream(rsm_stream *s) : s_(s) {}
  Stream(Stream &&o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  ~Stream() { rsm_stream_close(s_); }

  // Up to `len` bytes; 0 at the end.
  size_t read(uint8_t *buf, size_t len) {
    size_t n = 0;
    rsm_error *err = nullptr;
    rsm_result r = rsm_stream_read(s_, buf, len, &n, &err);
    check(r, err, "rsm_stream_read");
    return n;
  }

  std::vector<uint8_t> read_all() {
    std::vector<uint8_t> out;
    uint8_t buf[8192];
    for (size_t n; (n = read(buf, sizeof buf)) > 0;) out.insert(out.end(), buf, buf + n);
    return out;
  }

 private:
  rsm_stream *s_;
};

// The committed segments of a partition; the metadata it hands out lives as long as the list.
class SegmentList {
 public:
  explicit SegmentList(rsm_segment_list *l) : l_(l, &rsm_segment_list_free) {}
  size_t size() const { return rsm_segment_list_len(l_.get()); }
  const rsm_segment_metadata &operator[](size_t i) const { return *rsm_segment_list_get(l_.get(), i); }

 private:
  std::unique_ptr<rsm_segment_list, decltype(&rsm_segment_list_free)> l_;
};

// The records of one fetch; every record, key and value it hands out lives as long as it.
class Records {
 public:
  explicit Records(rsm_records *r) : r_(r, &rsm_records_free) {}
  size_t size() const { return rsm_records_len(r_.get()); }
  const rsm_record *operator[](size_t i) const { return rsm_records_get(r_.get(), i); }
  int64_t next_offset() const { return rsm_records_next_offset(r_.get()); }

  static std::string key(const rsm_record *r) {
    size_t len = 0;
    const uint8_t *p = rsm_record_key(r, &len);
    return p ? std::string(reinterpret_cast<const char *>(p), len) : std::string("<null>");
  }

 private:
  std::unique_ptr<rsm_records, decltype(&rsm_records_free)> r_;
};

// An open store, shared by any number of threads; closed when it goes out of scope.
class Store {
 public:
  explicit Store(const std::vector<std::pair<std::string, std::string>> &settings) {
    std::vector<rsm_setting> c;
    for (const auto &kv : settings) c.push_back({kv.first.c_str(), kv.second.c_str()});
    rsm_error *err = nullptr;
    rsm_result r = rsm_store_open(c.data(), c.size(), &s_, &err);
    check(r, err, "rsm_store_open");
  }
  Store(const Store &) = delete;
  Store &operator=(const Store &) = delete;
  ~Store() { rsm_store_close(s_); }

  std::vector<uint8_t> copy(const rsm_segment_metadata &md, const rsm_segment_files &files) {
    rsm_buffer *custom = nullptr;
    rsm_error *err = nullptr;
    rsm_result r = rsm_copy(s_, &md, &files, &custom, &err);
    check(r, err, "rsm_copy");
    std::unique_ptr<rsm_buffer, decltype(&rsm_buffer_free)> owned(custom, &rsm_buffer_free);
    const uint8_t *p = rsm_buffer_data(custom);
    return std::vector<uint8_t>(p, p + rsm_buffer_len(custom));
  }
  Stream fetch(const rsm_segment_metadata &md, int64_t start, int64_t end = RSM_END_OF_SEGMENT) {
    rsm_stream *s = nullptr;
    rsm_error *err = nullptr;
    rsm_result r = rsm_fetch(s_, &md, start, end, &s, &err);
    check(r, err, "rsm_fetch");
    return Stream(s);
  }
  Stream fetch_index(const rsm_segment_metadata &md, rsm_index_type type) {
    rsm_stream *s = nullptr;
    rsm_error *err = nullptr;
    rsm_result r = rsm_fetch_index(s_, &md, type, &s, &err);
    check(r, err, "rsm_fetch_index");
    return Stream(s);
  }
  void remove(const rsm_segment_metadata &md) {
    rsm_error *err = nullptr;
    rsm_result r = rsm_delete(s_, &md, &err);
    check(r, err, "rsm_delete");
  }
  Records records(const rsm_segment_metadata &md, const std::vector<const rsm_segment_metadata *> &later,
                  int64_t offset, size_t max_records, rsm_isolation isolation) {
    rsm_records *out = nullptr;
    rsm_error *err = nullptr;
    rsm_result r = rsm_records_fetch(s_, &md, later.data(), later.size(), offset, 1 << 20, max_records, isolation,
                                     0, &out, &err);
    check(r, err, "rsm_records_fetch");
    return Records(out);
  }
  SegmentList list(const rsm_topic_id_partition &tp) {
    rsm_segment_list *l = nullptr;
    rsm_error *err = nullptr;
    rsm_result r = rsm_list_segments(s_, &tp, &l, &err);
    check(r, err, "rsm_list_segments");
    return SegmentList(l);
  }

 private:
  rsm_store *s_ = nullptr;
};

}  // namespace rsm

namespace {

std::vector<uint8_t> file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void expect(bool ok, const std::string &what) {
  if (!ok) throw std::runtime_error("check failed: " + what);
}

struct Segment {
  std::string log, index, timeindex, txnindex, snapshot;
  std::vector<rsm_leader_epoch> epochs;
  rsm_segment_metadata md{};
};

}  // namespace

int main(int argc, char **argv) try {
  if (argc != 3) {
    std::cerr << "usage: rsm_host FIXTURE_DIR WORK_DIR\n";
    return 2;
  }
  const std::string fixture = argv[1], work = argv[2];
  std::ifstream in(fixture + "/segments.txt");
  expect(bool(in), "the fixture's segments.txt");
  std::string tag, topic, checkpoint_path;
  int32_t partition;
  long long msb, lsb;
  in >> tag >> topic >> partition >> msb >> lsb >> tag >> checkpoint_path;
  const std::vector<uint8_t> checkpoint = file(checkpoint_path);
  rsm_topic_id_partition tp{{msb, lsb}, topic.c_str(), partition};
  std::vector<Segment> segments;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::istringstream l(line);
    Segment s;
    long long start, end, max_ts;
    int32_t size;
    size_t n;
    l >> tag >> start >> end >> max_ts >> size >> s.log >> s.index >> s.timeindex >> s.txnindex >> s.snapshot >> n;
    for (size_t i = 0; i < n; i++) {
      rsm_leader_epoch e;
      long long o;
      l >> e.epoch >> o;
      e.start_offset = o;
      s.epochs.push_back(e);
    }
    s.md.segment_id = {0x7777000000000000LL + (int64_t)segments.size(), 42};
    s.md.start_offset = start;
    s.md.end_offset = end;
    s.md.max_timestamp_ms = max_ts;
    s.md.broker_id = 2;
    s.md.event_timestamp_ms = 1700000000000LL;
    s.md.segment_size_in_bytes = size;
    s.md.state = RSM_SEGMENT_STATE_COPY_SEGMENT_STARTED;
    segments.push_back(std::move(s));
  }
  expect(segments.size() >= 2, "at least two segments");

  const std::string store_dir = work + "/store-cpp";
  expect(std::system(("rm -rf '" + store_dir + "' && mkdir -p '" + store_dir + "'").c_str()) == 0, "a fresh store");
  {
    rsm::Store store({{"store.url", "file://" + store_dir}, {"chunk.size", "65536"}, {"fs.fsync", "false"}});
    for (auto &s : segments) {
      s.md.topic_id_partition = tp;
      s.md.leader_epochs = s.epochs.data();
      s.md.leader_epochs_len = s.epochs.size();
      rsm_segment_files f{s.log.c_str(),      s.index.c_str(),   s.timeindex.c_str(),
                          s.txnindex == "-" ? nullptr : s.txnindex.c_str(),
                          s.snapshot.c_str(), checkpoint.data(), checkpoint.size()};
      store.copy(s.md, f);
    }
    rsm::SegmentList listed = store.list(tp);
    expect(listed.size() == segments.size(), "every segment listed");
    for (size_t i = 0; i < segments.size(); i++) {
      const Segment &s = segments[i];
      expect(listed[i].start_offset == s.md.start_offset, "listed in order");
      const std::vector<uint8_t> log = file(s.log);
      expect(store.fetch(s.md, 0).read_all() == log, "the whole segment " + s.log);
      const size_t mid = log.size() / 3;
      expect(store.fetch(s.md, (int64_t)mid, (int64_t)(mid + 9999)).read_all() ==
                 std::vector<uint8_t>(log.begin() + mid, log.begin() + mid + 10000),
             "a range of " + s.log);
      expect(store.fetch_index(s.md, RSM_INDEX_TYPE_OFFSET).read_all() == file(s.index), "offset index");
      expect(store.fetch_index(s.md, RSM_INDEX_TYPE_TIMESTAMP).read_all() == file(s.timeindex), "time index");
      expect(store.fetch_index(s.md, RSM_INDEX_TYPE_PRODUCER_SNAPSHOT).read_all() == file(s.snapshot), "snapshot");
      expect(store.fetch_index(s.md, RSM_INDEX_TYPE_LEADER_EPOCH).read_all() == checkpoint, "leader epochs");
      if (s.txnindex == "-") {
        try {
          store.fetch_index(s.md, RSM_INDEX_TYPE_TRANSACTION);
          expect(false, "no transaction index");
        } catch (const rsm::Error &e) {
          expect(e.code() == RSM_RESULT_NOT_FOUND, std::string("not found: ") + e.what());
        }
      }
    }
    // Records rather than bytes: the fixture's keys are `key-<offset % 1000>`, no transactions, so both
    // isolation levels give the same records.
    std::vector<const rsm_segment_metadata *> later;
    for (size_t i = 1; i < segments.size(); i++) later.push_back(&segments[i].md);
    const int64_t from = segments[0].md.start_offset + 5;
    for (rsm_isolation level : {RSM_ISOLATION_READ_UNCOMMITTED, RSM_ISOLATION_READ_COMMITTED}) {
      rsm::Records got = store.records(segments[0].md, later, from, 40, level);
      expect(got.size() == 40 && got.next_offset() == from + 40, "40 records and the offset after them");
      for (size_t i = 0; i < got.size(); i++) {
        const int64_t o = from + (int64_t)i;
        expect(rsm_record_offset(got[i]) == o, "record offsets in order");
        expect(rsm::Records::key(got[i]) == "key-" + std::to_string(o % 1000), "the key of record " + std::to_string(o));
        expect(rsm_record_timestamp_type(got[i]) == RSM_TIMESTAMP_TYPE_CREATE_TIME, "create time");
      }
      expect(got[got.size()] == nullptr, "NULL past the end");
    }
    try {
      store.records(segments[0].md, later, from, 1, static_cast<rsm_isolation>(7));
      expect(false, "an unknown isolation level is refused");
    } catch (const rsm::Error &e) {
      expect(e.code() == RSM_RESULT_INVALID_ARGUMENT, std::string("invalid: ") + e.what());
    }
    for (const auto &s : segments) store.remove(s.md);
    expect(store.list(tp).size() == 0, "nothing left after delete");
    try {
      store.fetch(segments[0].md, 0);
      expect(false, "a deleted segment cannot be fetched");
    } catch (const rsm::Error &e) {
      expect(e.code() == RSM_RESULT_NOT_FOUND, std::string("not found: ") + e.what());
    }
  }
  size_t stores = 1, streams = 1;
  rsm_open_handles(&stores, &streams);
  expect(stores == 0 && streams == 0, "every handle closed by its destructor");
  std::system(("rm -rf '" + store_dir + "'").c_str());
  std::cout << "cpp round trip: ok (" << segments.size() << " segments)\n";
  return 0;
} catch (const std::exception &e) {
  std::cerr << "rsm_host: " << e.what() << "\n";
  return 1;
}
