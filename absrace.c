#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <pthread.h>
#include <unistd.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stddef.h>
#include <fcntl.h>
static volatile int stop; static int FD=100, U, I;
static void* flip(void*x){ while(!stop){ dup2(U,FD); dup2(I,FD);} return 0;}
int main(int c,char**v){ struct sockaddr_un a={.sun_family=AF_UNIX}; strcpy(a.sun_path+1,v[1]); a.sun_path[0]=0; socklen_t alen=offsetof(struct sockaddr_un,sun_path)+1+strlen(v[1]); int n=atoi(v[2]); int dg=(c>3&&!strcmp(v[3],"dgram"));
 U=socket(AF_UNIX,dg?SOCK_DGRAM:SOCK_STREAM,0); I=open("/dev/null",0); /* any non-socket fd: works in strict too */ dup2(I,FD);
 pthread_t t; pthread_create(&t,0,flip,0); int eacc=0,other=0,k;
 for(k=0;k<n;k++){ int r= dg? sendto(FD,"RACED-DGRAM",11,0,(struct sockaddr*)&a,alen) : connect(FD,(struct sockaddr*)&a,alen);
  if(r<0){ if(errno==EACCES) eacc++; else other++; }
  if(!dg){ struct sockaddr_un p; socklen_t l=sizeof p; if(getpeername(U,(struct sockaddr*)&p,&l)==0){ stop=1; pthread_join(t,0); write(U,"RACED-STREAM",12); printf("WON at %d: U connected to %s\n",k,p.sun_path); return 0;} }
 }
 stop=1; printf("done: eacces=%d other=%d\n",eacc,other); return 1; }
