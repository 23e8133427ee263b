#include "drover/exec/slurm/submit_helper.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

namespace drover::exec::slurm {
namespace {

constexpr std::string_view kOk = "ok ";
constexpr std::string_view kError = "error ";
// More arguments than RenderSbatch and RenderArray ever write, by far.
constexpr std::size_t kMaxArguments = 256;

bool ReadExactly(int fd, char* into, std::size_t size, int timeout_ms) {
  std::size_t done = 0;
  while (done < size) {
    if (!os::WaitReadable(fd, timeout_ms)) return false;
    const ssize_t n = read(fd, into + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = 0;  // the end of the stream
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Why an exchange with the helper gave no answer to take, from ReadFrame's result `read`, the
// frame it read (`reply`) and errno after it (`error`).
std::string NoAnswer(int read, const std::string& reply, int error) {
  if (read == 0) return "it exited";
  if (read == 1) return "it answered '" + reply.substr(0, 200) + "'";
  return std::strerror(error);
}

}  // namespace

std::string EncodeSubmitRequest(const Sbatch& sbatch) {
  std::string payload = std::to_string(sbatch.args.size());
  payload += '\0';
  for (const std::string& arg : sbatch.args) {
    payload += arg;
    payload += '\0';
  }
  payload += sbatch.script;
  payload += '\0';
  return payload;
}

Result<Sbatch> DecodeSubmitRequest(std::string_view payload) {
  std::vector<std::string_view> fields;
  while (!payload.empty()) {
    const std::size_t end = payload.find('\0');
    if (end == std::string_view::npos) {
      return InvalidArgument("submit request: the last field has no terminating NUL");
    }
    fields.push_back(payload.substr(0, end));
    payload.remove_prefix(end + 1);
  }
  std::size_t count = 0;
  const std::string_view digits = fields.empty() ? std::string_view() : fields.front();
  const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), count);
  if (fields.empty() || parsed.ec != std::errc() || parsed.ptr != digits.data() + digits.size()) {
    return InvalidArgument("submit request: it must start with the number of arguments");
  }
  if (count > kMaxArguments) {
    return InvalidArgument(
        fmt::format("submit request: {} arguments, more than {}", count, kMaxArguments));
  }
  if (fields.size() != count + 2) {
    return InvalidArgument(
        fmt::format("submit request: {} arguments and a script announced, {} fields sent", count,
                    fields.size() - 1));
  }
  Sbatch sbatch;
  for (std::size_t i = 1; i <= count; ++i) sbatch.args.emplace_back(fields[i]);
  sbatch.script = std::string(fields.back());
  return sbatch;
}

std::string Frame(std::string_view payload) {
  const auto size = static_cast<std::uint32_t>(payload.size());
  std::string frame(4, '\0');
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((size >> (8 * i)) & 0xff);
  frame += payload;
  return frame;
}

int ReadFrame(int fd, std::string& payload, int timeout_ms, std::size_t max_bytes) {
  unsigned char header[4];
  if (!ReadExactly(fd, reinterpret_cast<char*>(header), 1, timeout_ms)) {
    return errno == 0 ? 0 : -1;
  }
  if (!ReadExactly(fd, reinterpret_cast<char*>(header) + 1, 3, timeout_ms)) {
    if (errno == 0) errno = EPROTO;
    return -1;
  }
  std::uint32_t size = 0;
  for (int i = 0; i < 4; ++i) size |= static_cast<std::uint32_t>(header[i]) << (8 * i);
  if (size > max_bytes) {
    errno = EMSGSIZE;
    return -1;
  }
  payload.assign(size, '\0');
  if (!ReadExactly(fd, payload.data(), size, timeout_ms)) {
    if (errno == 0) errno = EPROTO;
    return -1;
  }
  return 1;
}

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

SubmitHelper::SubmitHelper(std::string program)
    : process_({.program = std::move(program),
                .args = {},
                .socket_type = SOCK_STREAM,
                .environment = {}}) {}

SubmitHelper::~SubmitHelper() {
  MutexLock lock(mu_);
  process_.Stop();
}

pid_t SubmitHelper::HelperPid() {
  MutexLock lock(mu_);
  return process_.pid();
}

Result<std::string> SubmitHelper::Submit(const Sbatch& sbatch) {
  const std::string request = Frame(EncodeSubmitRequest(sbatch));
  if (request.size() > kMaxSubmitFrameBytes + 4) {
    return InvalidArgument(
        fmt::format("the batch job is {} bytes, more than the {} a submission takes",
                    request.size(), kMaxSubmitFrameBytes));
  }
  MutexLock lock(mu_);
  for (bool resent = false;;) {
    DROVER_RETURN_IF_ERROR(process_.Start());
    const bool sent = WriteAll(process_.socket(), request);
    std::string reply;
    const int read = sent ? ReadFrame(process_.socket(), reply, kReplyTimeoutMs) : -1;
    const int error = errno;
    if (read == 1 && reply.starts_with(kOk) && reply.size() > kOk.size()) {
      return reply.substr(kOk.size());
    }
    if (read == 1 && reply.starts_with(kError)) return Internal(reply.substr(kError.size()));
    process_.Stop();
    // A helper that ended with bytes of the request unread (EPIPE on the write; ECONNRESET on
    // the read, which a stream socket reports when its peer closed with data still queued to
    // it) never decoded the request, so nothing of it reached Slurm: start another and send it
    // again, once. A helper that read it all and then ended (the end of the stream) or stayed
    // silent may have submitted it.
    const bool unread =
        sent ? read < 0 && error == ECONNRESET : error == EPIPE || error == ECONNRESET;
    if (unread && !resent) {
      resent = true;
      continue;
    }
    if (unread) {
      return Internal(fmt::format("cannot reach {}: {}", process_.program(), std::strerror(error)));
    }
    return Internal(fmt::format("{} took the job but gave no answer ({}); Slurm may hold it",
                                process_.program(), NoAnswer(read, reply, error)));
  }
}

Result<std::string> SubmitHelper::ListJobs(Listing listing) {
  const std::string request =
      Frame(listing == Listing::kWhole ? kListJobsRequest : kListChangedJobsRequest);
  MutexLock lock(mu_);
  DROVER_RETURN_IF_ERROR(process_.Start());
  std::string reply;
  const int read = WriteAll(process_.socket(), request)
                       ? ReadFrame(process_.socket(), reply, kReplyTimeoutMs, kMaxListingFrameBytes)
                       : -1;
  const int error = errno;
  if (read == 1 && reply.starts_with(kOk)) {
    last_listing_ = reply.substr(kOk.size());
    last_listing_by_ = process_.pid();
    return last_listing_;
  }
  // Only the process that gave the last listing can say it still holds (a new helper's first
  // listing is a whole one), and only when asked.
  if (read == 1 && reply == kListingUnchanged && listing == Listing::kIfChanged &&
      last_listing_by_ == process_.pid()) {
    return last_listing_;
  }
  if (read == 1 && reply.starts_with(kError)) return Internal(reply.substr(kError.size()));
  process_.Stop();
  return Internal(fmt::format("{} gave no listing of Slurm's jobs ({})", process_.program(),
                              NoAnswer(read, reply, error)));
}

}  // namespace drover::exec::slurm
