#!/usr/bin/ruby
# ruby-lockfile.rb — drives lockfile (RubyGems lockfile, by ahoward; Debian
# ruby-lockfile).
#
#   ruby-lockfile.rb [--max-age S] [--refresh S] LOCK ACTION [ARGS]
#
# Lockfile writes host/pid/ppid/time to a unique file DIR/HOST_PID_..._.lck,
# links it to LOCK and checks that lstat of both gives the same inode.
# While held, a refresher thread touches LOCK (FileUtils.touch: utime with
# no times, i.e. now) every `refresh` seconds and reads it back: a lock
# whose content is no longer ours raises StolenLockError in the holder.
# With max_age S a contender unlinks ("steals") a lock whose mtime is more
# than S seconds old.  Release is unlink.  Actions: see README.md here.
$stdout.sync = true
# The library's define_finalizer draws a warning from Ruby 3 at every lock.
$VERBOSE = nil
begin
  require 'lockfile'
rescue LoadError => e
  puts "error: lockfile is not installed: #{e.message}"
  exit 2
end
require 'fcntl'

def say(*w) = puts(w.join(' '))
def now_ns = Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)

if ARGV == ['version']
  say('lockfile', Lockfile::VERSION)
  exit 0
end
max_age = nil
refresh = nil
while ARGV[0]&.start_with?('--')
  opt, val = ARGV.shift(2)
  case opt
  when '--max-age' then max_age = Float(val)
  when '--refresh' then refresh = Float(val)
  else say('error: unknown option', opt); exit 2
  end
end
path = ARGV.shift
action = ARGV.shift.to_s
args = ARGV

# Short sleeps (the defaults are 2..32 s) and no pause after a steal (the
# default suspend is 1800 s); everything else is the library's default.
BASE = { 'max_age' => max_age, 'refresh' => refresh, 'suspend' => 0,
         'min_sleep' => 0.25, 'max_sleep' => 1, 'sleep_inc' => 0.25 }.freeze
$lock = nil

def attempt(path)
  $lock = Lockfile.new(path, BASE.merge('retries' => 0, 'poll_retries' => 1))
  $lock.lock
  true
rescue Lockfile::MaxTriesLockError
  false
end

def wait(path, secs)
  $lock = Lockfile.new(path, BASE.merge('timeout' => secs))
  $lock.lock
  true
rescue Lockfile::TimeoutLockError
  false
end

def release
  $lock.unlock
  nil
rescue Lockfile::StolenLockError => e
  "StolenLockError: #{e.message}"
end

rc = begin
  case action
  when 'try'
    if attempt(path)
      say('got')
      why = release
      why ? (say('lost:', why); 3) : (say('released'); 0)
    else
      say('held'); 1
    end
  when 'hold'
    secs = Float(args[0])
    stop = args[1]
    if attempt(path)
      say('got')
      why = nil
      begin
        t0 = Time.now
        while Time.now - t0 < secs
          break if stop && File.exist?(stop)
          sleep 0.05
        end
      rescue Lockfile::StolenLockError => e
        # The refresher's word, raised in this thread.
        why = "StolenLockError: #{e.message}"
      end
      why ||= release
      why ? (say('lost:', why); 3) : (say('released'); 0)
    else
      say('held'); 1
    end
  when 'wait'
    t0 = Time.now
    got = wait(path, Float(args[0]))
    dt = format('%.2f', Time.now - t0)
    if got
      say('got after', dt)
      why = release
      why ? (say('lost:', why); 3) : 0
    else
      say('timeout after', dt); 1
    end
  when 'contend'
    n, log, id, host, deadline = Integer(args[0]), args[1], args[2], args[3], Float(args[4])
    # One write(2) per line on an O_APPEND descriptor: a linear history.
    fd = IO.sysopen(log, Fcntl::O_WRONLY | Fcntl::O_APPEND | Fcntl::O_CREAT, 0o644)
    out = IO.new(fd)
    done = errs = 0
    backoff = 0.004
    while done < n && Time.now.to_f < deadline
      got = begin
        attempt(path)
      rescue StandardError => e
        errs += 1
        warn "attempt: #{e.class}: #{e.message}"
        false
      end
      unless got
        sleep(backoff / 2 + rand * backoff / 2)
        backoff = [backoff * 2, 0.128].min
        next
      end
      backoff = 0.004
      done += 1
      out.syswrite("S #{host} #{id} #{done} #{now_ns}\n")
      sleep(0.001 + rand * 0.003)
      out.syswrite("E #{host} #{id} #{done} #{now_ns}\n")
      why = release
      (errs += 1; warn "release: #{why}") if why
      sleep(0.002 + rand * 0.006)
    end
    say('done', done, n, errs)
    done == n && errs.zero? ? 0 : 1
  else
    say("error: unknown action '#{action}'"); 2
  end
rescue StandardError => e
  say("error: #{e.class}: #{e.message}")
  2
end
exit rc
