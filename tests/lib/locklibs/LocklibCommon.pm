package LocklibCommon;
# LocklibCommon.pm — the driver protocol shared by the Perl lock-library
# drivers in this directory (see README.md here for the protocol).
#
# LocklibCommon::main(\@ARGV, attempt => sub { 1 got / 0 held; dies otherwise },
#                     release => sub { undef, or why the lock was not ours },
#                     wait => sub { my $secs = shift; 1 got / 0 timed out })
use strict;
use warnings;
use Fcntl qw(O_WRONLY O_APPEND O_CREAT);
use Time::HiRes qw(time sleep);

$| = 1;

sub say_ { print join(' ', @_), "\n" }

sub now_ns { sprintf '%.0f', time() * 1e9 }

sub main {
    my ($argv, %lib) = @_;
    my ($action, @args) = @$argv;
    $action //= '';
    my $rc = eval {
        if ($action eq 'try') {
            return say_('held'), 1 unless $lib{attempt}->();
            say_('got');
            my $why = $lib{release}->();
            return say_("lost: $why"), 3 if defined $why;
            say_('released');
            return 0;
        }
        if ($action eq 'hold') {
            my ($secs, $stop) = @args;
            return say_('held'), 1 unless $lib{attempt}->();
            say_('got');
            my $t0 = time;
            while (time - $t0 < $secs) {
                last if defined $stop && -e $stop;
                sleep 0.05;
            }
            my $why = $lib{release}->();
            return say_("lost: $why"), 3 if defined $why;
            say_('released');
            return 0;
        }
        if ($action eq 'wait') {
            my $t0 = time;
            my $got = $lib{wait}->($args[0]);
            my $dt = sprintf '%.2f', time - $t0;
            return say_("timeout after $dt"), 1 unless $got;
            say_("got after $dt");
            my $why = $lib{release}->();
            return say_("lost: $why"), 3 if defined $why;
            return 0;
        }
        if ($action eq 'contend') {
            my ($n, $log, $id, $host, $deadline) = @args;
            # One write(2) per line on an O_APPEND descriptor: a linear history.
            sysopen(my $fh, $log, O_WRONLY | O_APPEND | O_CREAT, 0644) or die "open $log: $!\n";
            my ($done, $errs, $backoff) = (0, 0, 0.004);
            while ($done < $n && time < $deadline) {
                my $got = eval { $lib{attempt}->() };
                if (!defined $got) {
                    $errs++;
                    print STDERR "attempt: $@";
                    $got = 0;
                }
                if (!$got) {
                    sleep($backoff / 2 + rand($backoff / 2));
                    $backoff *= 2 if $backoff < 0.128;
                    next;
                }
                $backoff = 0.004;
                $done++;
                syswrite $fh, "S $host $id $done " . now_ns() . "\n";
                sleep(0.001 + rand(0.003));
                syswrite $fh, "E $host $id $done " . now_ns() . "\n";
                my $why = $lib{release}->();
                if (defined $why) { $errs++; print STDERR "release: $why\n" }
                sleep(0.002 + rand(0.006));
            }
            say_("done $done $n $errs");
            return ($done == $n && $errs == 0) ? 0 : 1;
        }
        say_("error: unknown action '$action'");
        return 2;
    };
    if (!defined $rc) {
        my $e = $@;
        chomp $e;
        say_("error: $e");
        return 2;
    }
    return $rc;
}

1;
