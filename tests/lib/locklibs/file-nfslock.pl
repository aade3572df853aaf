#!/usr/bin/perl
# file-nfslock.pl — drives File::NFSLock (CPAN File-NFSLock; Debian
# libfile-nfslock-perl).
#
#   file-nfslock.pl [--stale S] LOCK ACTION [ARGS]
#
# File::NFSLock writes "HOST PID TIME RAND" to a unique file FILE.tmp.*,
# links it to FILE$LOCK_EXTENSION and checks that the unique file's nlink is
# 2; the extension is set to ".lock" (its documented knob), so LOCK
# (NAME.lock) is passed as NAME.  With stale_lock_timeout S a contender
# unlinks a lock whose mtime is more than S seconds old.  A blocking lock
# retries every second.  Actions: see README.md in this directory.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use LocklibCommon;
use Fcntl qw(LOCK_EX LOCK_NB);

BEGIN {
    eval { require File::NFSLock; 1 } or do {
        print "error: File::NFSLock is not installed: ", (split /\n/, $@)[0], "\n";
        exit 2;
    };
}
$File::NFSLock::LOCK_EXTENSION = '.lock';

if (@ARGV == 1 && $ARGV[0] eq 'version') { print "File::NFSLock $File::NFSLock::VERSION\n"; exit 0 }
my $stale = 0;
while (@ARGV && $ARGV[0] =~ /^--/) {
    my ($opt, $val) = splice @ARGV, 0, 2;
    if ($opt eq '--stale') { $stale = $val } else { print "error: unknown option $opt\n"; exit 2 }
}
my $lockpath = shift @ARGV;
unless (defined $lockpath && $lockpath =~ /\.lock$/) {
    print "error: usage: file-nfslock.pl [--stale S] NAME.lock ACTION\n";
    exit 2;
}
(my $file = $lockpath) =~ s/\.lock$//;
my $lock;

sub take {
    my ($type, $timeout) = @_;
    $lock = File::NFSLock->new({
        file => $file, lock_type => $type,
        blocking_timeout => $timeout, stale_lock_timeout => $stale,
    });
    return 1 if $lock;
    my $e = $File::NFSLock::errstr // '';
    return 0 if $e =~ /NONBLOCKING lock failed|Timed out waiting/;
    die "$e\n";
}

exit LocklibCommon::main(\@ARGV,
    attempt => sub { take(LOCK_EX | LOCK_NB, 0) },
    wait => sub { take(LOCK_EX, $_[0]) },
    # unlock() unlinks the lock and answers 1 whatever happened: the library
    # has no word for a lost lock.
    release => sub { $lock->unlock; undef $lock; return undef },
);
